// One hook keeps an open settings page current: a fetch-based SSE
// connection to GET /api/settings/events says when a policy, lock, default,
// rule, card or hook changed (in another tab, by another admin, on another
// replica), and the page's queries are read again. The event says only what
// kind of thing changed; what the page shows comes from the API, as the
// caller.
//
// A change heard while one of this page's own changes is in flight waits
// until they have all settled: reading the tools in between would undo an
// optimistic choice not saved yet (see queries.ts). After a drop the hook
// reconnects (backoff) and reads everything again, since not every kind of
// change moves the version the stream resumes from. A tab hidden for a while
// lets its stream go and catches up when shown again.
import { useQueryClient, type QueryClient, type QueryKey } from "@tanstack/react-query";
import { useEffect } from "react";
import { settingsEventsPath } from "../api/client";
import { backoff, followStream } from "../api/eventStream";
import { keys } from "../api/query";

/** What changed (docs/sse-events.md, `settings.changed`). */
export type SettingsChangeKind = "workspace" | "personal" | "card" | "server" | "decision_hook" | "webhook" | "resync";

/** Timing of the connection; tests shorten it. */
export const settingsEventsTiming = {
  /** First pause before reconnecting; it doubles with each drop in a row, up to maxDelayMs. */
  baseDelayMs: 500,
  maxDelayMs: 15_000,
  /** Silence (not even a heartbeat) after which the connection counts as dropped. */
  idleMs: 45_000,
  /** How long a hidden tab keeps its stream. */
  hiddenGraceMs: 30_000,
};

const cards: QueryKey = ["approvalCards"];
const hooks: QueryKey = ["decision-hook"];
const everything: QueryKey[] = [keys.servers, keys.settings, keys.rules(), cards, hooks, keys.webhooks];

/** The queries (by key prefix) that show each kind of change; unknown kinds read everything again. */
export function keysFor(kinds: readonly string[]): QueryKey[] {
  const out = new Map<string, QueryKey>();
  const add = (...ks: QueryKey[]) => ks.forEach((k) => out.set(JSON.stringify(k), k));
  for (const kind of kinds) {
    switch (kind as SettingsChangeKind) {
      // A server's tools are under keys.servers too (keys.tools).
      case "workspace": add(keys.servers, keys.settings, keys.rules(), cards); break;
      case "personal": add(keys.servers); break;
      case "card": add(cards); break;
      case "server": add(keys.servers); break;
      case "decision_hook": add(hooks); break;
      case "webhook": add(keys.webhooks); break;
      default: add(...everything);
    }
  }
  return [...out.values()];
}

/**
 * Reads the given queries again, at once or, while one of this page's
 * changes is in flight, once every change has settled.
 */
export function invalidateWhenSettled(qc: QueryClient, which: QueryKey[]): void {
  const run = () => which.forEach((queryKey) => void qc.invalidateQueries({ queryKey }));
  if (qc.isMutating() === 0) return run();
  const stop = qc.getMutationCache().subscribe(() => {
    if (qc.isMutating() > 0) return;
    stop();
    run();
  });
}

/** Follows GET /api/settings/events while the page is open. */
export function useSettingsEvents(): void {
  const qc = useQueryClient();
  useEffect(() => {
    const stop = new AbortController();
    void follow(qc, stop.signal);
    return () => stop.abort();
  }, [qc]);
}

/** Follows the settings stream: runs until signal aborts or the server refuses (signed out, forbidden). */
function follow(qc: QueryClient, signal: AbortSignal): Promise<void> {
  let cursor: string | null = null;
  let opens = 0;
  let drops = 0;
  return followStream(settingsEventsPath, settingsEventsTiming, signal, {
    begin: () => cursor,
    opened: (res) => {
      cursor = res.headers.get("X-Settings-Version") ?? cursor;
      // Back after a drop or a hidden spell: what changed meanwhile was not heard.
      if (opens++ > 0) invalidateWhenSettled(qc, everything);
      drops = 0;
    },
    event: (raw) => {
      if (raw.event !== "settings.changed") return;
      if (raw.id) cursor = raw.id;
      let kinds: string[] = ["resync"];
      try { kinds = (JSON.parse(raw.data) as { kinds?: string[] }).kinds ?? kinds; } catch { /* read everything */ }
      invalidateWhenSettled(qc, keysFor(kinds));
    },
    refused: () => {},
    dropped: () => backoff(++drops, settingsEventsTiming),
  });
}
