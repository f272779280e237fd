// One hook keeps the inbox current wherever the app is open: a fetch-based
// SSE connection to GET /api/approvals/events says when the set of requests
// waiting for me changed (asked, decided, expired, withdrawn; in any chat or
// agent, on any replica), and the inbox is read again through the API. The
// event carries only ids; the cards come from GET /api/approvals. After a
// drop it reconnects (backoff); the first event of every connection is the
// state then, so nothing missed meanwhile stays stale.
import { useQueryClient, type QueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { inboxEventsPath } from "../api/client";
import { backoff, followStream } from "../api/eventStream";
import { keys } from "../api/query";

/** Timing of the connection; tests shorten it. */
export const inboxEventsTiming = {
  baseDelayMs: 500,
  maxDelayMs: 15_000,
  /** Silence (not even a heartbeat) after which the connection counts as dropped. */
  idleMs: 45_000,
  /** How long a hidden tab keeps its stream (it still counts for the title meanwhile). */
  hiddenGraceMs: 5 * 60_000,
};

/** Follows GET /api/approvals/events while the app is open. */
export function useInboxEvents(): void {
  const qc = useQueryClient();
  useEffect(() => {
    const stop = new AbortController();
    void follow(qc, stop.signal);
    return () => stop.abort();
  }, [qc]);
}

/** The ids an approvals.changed event says wait now; null when it cannot be read. */
export function idsOf(data: string): string[] | null {
  try {
    const ids = (JSON.parse(data) as { approval_request_ids?: unknown }).approval_request_ids;
    return Array.isArray(ids) && ids.every((x) => typeof x === "string") ? ids : null;
  } catch {
    return null;
  }
}

function follow(qc: QueryClient, signal: AbortSignal): Promise<void> {
  let drops = 0;
  return followStream(inboxEventsPath, inboxEventsTiming, signal, {
    begin: () => null,
    opened: () => { drops = 0; },
    event: (raw) => {
      if (raw.event !== "approvals.changed") return;
      const ids = idsOf(raw.data);
      const shown = qc.getQueryData<{ approval_request_id: string }[]>(keys.inbox);
      // Already showing exactly these: nothing to read.
      if (ids && shown && ids.join(" ") === shown.map((a) => a.approval_request_id).join(" ")) return;
      void qc.invalidateQueries({ queryKey: keys.inbox, exact: true });
      // A chat's requests changed: its row in the list counts them.
      void qc.invalidateQueries({ queryKey: keys.conversations, exact: true });
    },
    refused: () => {},
    dropped: () => backoff(++drops, inboxEventsTiming),
  });
}
