// One hook follows one conversation live: while it is open, a fetch-based
// SSE connection to GET /api/conversations/{id}/events brings every event of
// the conversation, from whichever tab, client or replica runs its turn, and
// the conversation's feed applies each one to the query cache (once, by id:
// this page's own POST stream brings the same events). It replaces polling.
//
// Where it starts: after the transcript read (its last_event_id) when no turn
// runs; while a turn runs, from that turn's first event (the server's choice
// without a cursor), so a reload shows the answer streamed so far; a read
// once the stream is open fills in what the stream did not replay. After a
// drop it resumes with Last-Event-ID (backoff, bounded); a stream silent for
// longer than the heartbeats allow counts as a drop. A tab hidden for a while
// lets its stream go (browsers allow few connections per host) and resumes
// where it was when it is shown again.
import { useQueryClient, type QueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useState, useSyncExternalStore } from "react";
import { eventsPath } from "../api/client";
import { readChatEvent } from "../api/events";
import { backoff, followStream } from "../api/eventStream";
import { invalidateConversationList, keys } from "../api/query";
import type { Transcript } from "../api/types";
import { feedOf } from "./conversationFeed";
import type { LiveTurn } from "./liveTurn";

/** connecting: not open yet; live: open; retrying: dropped, resuming soon; off: given up or refused (see reconnect). */
export type EventsConnection = "connecting" | "live" | "retrying" | "off";

/** Timing of the connection; tests shorten it. */
export const eventsTiming = {
  /** First pause before resuming after a drop; it doubles with each drop in a row, up to maxDelayMs. */
  baseDelayMs: 500,
  maxDelayMs: 15_000,
  /** Drops in a row before it gives up (about a minute with the delays above). */
  attempts: 8,
  /** A connection open this long counted as good: the next drop starts the backoff again. */
  healthyMs: 5_000,
  /** Silence (not even a heartbeat, sent every 15 s at most) after which the connection counts as dropped. */
  idleMs: 45_000,
  /** How long a hidden tab keeps its stream. */
  hiddenGraceMs: 30_000,
};

export interface ConversationEvents {
  /** The turn running in this conversation as its events show it (started anywhere), or null. */
  turn: LiveTurn | null;
  connection: EventsConnection;
  /** Connect again after the hook gave up. */
  reconnect(): void;
}

const none = () => null;
const noSubscription = () => () => {};

/**
 * Follows conversationId once ready (its transcript has been read, so the
 * stream can start after it).
 */
export function useConversationEvents(conversationId: string | undefined, ready: boolean): ConversationEvents {
  const qc = useQueryClient();
  const [generation, setGeneration] = useState(0);
  const scope = `${conversationId ?? ""}#${generation}`;
  const [conn, setConn] = useState<{ scope: string; state: EventsConnection }>({ scope, state: "connecting" });

  useEffect(() => {
    if (!conversationId || !ready) return;
    const stop = new AbortController();
    void follow(qc, conversationId, stop.signal, (state) => setConn({ scope, state }));
    return () => stop.abort();
  }, [qc, conversationId, ready, scope]);

  const feed = conversationId ? feedOf(qc, conversationId) : null;
  const turn = useSyncExternalStore(feed?.subscribe ?? noSubscription, feed?.live ?? none);
  const reconnect = useCallback(() => setGeneration((g) => g + 1), []);
  return { turn, connection: conn.scope === scope ? conn.state : "connecting", reconnect };
}

/** Follows the conversation's stream: runs until signal aborts, the server refuses, or it gives up. */
function follow(qc: QueryClient, id: string, signal: AbortSignal, onState: (s: EventsConnection) => void): Promise<void> {
  const feed = feedOf(qc, id);
  const key = keys.conversation(id);
  const read = qc.getQueryData<Transcript>(key);
  const last = read?.conversation.last_event_id;
  let cursor: number | null = read && !read.conversation.streaming && typeof last === "number" ? last : null;
  let drops = 0;
  let delivered = false;

  // The conversation is gone (deleted, or not this person's): read it again, which says so.
  const gone = () => {
    void qc.invalidateQueries({ queryKey: key, exact: true });
    void invalidateConversationList(qc);
    onState("off");
  };

  return followStream(eventsPath(id), eventsTiming, signal, {
    begin: () => {
      delivered = false;
      return cursor === null ? null : String(cursor);
    },
    opened: () => {
      onState("live");
      // Started where the server chose: a read from now on holds what the stream does not replay.
      if (cursor === null) void qc.invalidateQueries({ queryKey: key, exact: true });
    },
    event: (raw) => {
      const n = Number(raw.id);
      if (Number.isSafeInteger(n) && n > 0) cursor = n;
      const ev = readChatEvent(raw);
      if (!ev) return;
      delivered = true;
      feed.accept(ev);
      if (ev.event === "conversation.deleted") {
        gone();
        return "stop";
      }
    },
    // Refused (gone, signed out, forbidden): trying again would not help.
    refused: (err) => (err.status === 404 ? gone() : onState("off")),
    dropped: (begun) => {
      if (delivered || Date.now() - begun >= eventsTiming.healthyMs) drops = 0;
      drops++;
      if (drops > eventsTiming.attempts) {
        onState("off");
        return null;
      }
      onState("retrying");
      return backoff(drops, eventsTiming);
    },
  });
}
