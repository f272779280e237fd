// One hook owns one chat stream: a POST answered with text/event-stream, read
// with parseSSE into typed events, and an AbortController to leave it. What
// the server stores (items, approval requests, decisions) goes into the query
// cache as it arrives, through the conversation's feed, which applies each
// event once whichever stream brings it (see conversationFeed.ts); the
// transcript is read back when the turn ends. The hook itself keeps only what is not stored yet: the message being
// sent, answer text still streaming, and which tools run now.
//
// The returned object, and every function on it, keeps its identity until
// the stream's state changes, so effects and memoised children can depend on
// them.
import { useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { ApiError, api, send, streams } from "../api/client";
import { isTerminal, parseSSE, readChatEvent, type ChatEvent } from "../api/events";
import { invalidateConversationList, keys } from "../api/query";
import type { Transcript } from "../api/types";
import i18n from "../i18n";
import { feedOf } from "./conversationFeed";
import { advance, newTurn, type LiveTurn, type StreamRequest } from "./liveTurn";
import { newTranscript, setStreaming } from "./transcript";

export type { LiveText, LiveTurn, StreamRequest, Terminal } from "./liveTurn";

export type StartResult =
  | { ok: true; conversationId: string | null; ended: Promise<LiveTurn> }
  | { ok: false; error: ApiError; aborted: boolean };

export interface ChatStreamOptions {
  /** The stream's conversation became known (a new conversation's id arrives with the headers). */
  onConversation?(id: string, turn: LiveTurn): void;
  /** The stream ended: a terminal event, Stop, leaving, or the connection broke. */
  onEnd?(turn: LiveTurn): void;
}

/** How long Stop waits for the stream to end by itself once the server cancelled the turn. */
export const stopGraceMs = 2000;

/** Refused without asking the server: this page streams already. */
export const BUSY = "stream_busy";

function requestFor(req: StreamRequest) {
  switch (req.kind) {
    case "message": return streams.message(req.input, req.conversationId);
    case "decisions": return streams.decisions(req.conversationId, req.decisions);
    case "retry": return streams.retry(req.conversationId);
  }
}

interface Live {
  ctl: AbortController;
  reason: "stopped" | "detached" | null;
  ended: Promise<LiveTurn>;
  turn: () => LiveTurn;
}

export function useChatStream(options: ChatStreamOptions = {}) {
  const qc = useQueryClient();
  const optsRef = useRef(options);
  useEffect(() => { optsRef.current = options; });

  const [turn, setTurn] = useState<LiveTurn | null>(null);
  const [stopping, setStopping] = useState(false);
  const live = useRef<Live | null>(null);

  // Leaving the page leaves the stream; the turn goes on on the server.
  useEffect(() => () => {
    const l = live.current;
    if (l) { l.reason = "detached"; l.ctl.abort(); }
  }, []);

  const start = useCallback(async (req: StreamRequest): Promise<StartResult> => {
    if (live.current) return { ok: false, aborted: false, error: new ApiError(409, BUSY, i18n.t("chat:stream.busy")) };
    const ctl = new AbortController();
    let resolveEnded!: (t: LiveTurn) => void;
    const ended = new Promise<LiveTurn>((r) => { resolveEnded = r; });
    let t = newTurn(req);
    const entry: Live = { ctl, reason: null, ended, turn: () => t };
    live.current = entry;
    const commit = (next: LiveTurn) => { t = next; setTurn(next); };
    setStopping(false);
    commit(t);

    const cached = () => (t.conversationId ? qc.getQueryData<Transcript>(keys.conversation(t.conversationId)) : undefined);
    /** The turn runs in this conversation: the cache and the list say so. */
    const begin = (id: string) => {
      const isNew = t.conversationId === null;
      if (isNew) commit({ ...t, conversationId: id });
      const key = keys.conversation(id);
      if (!qc.getQueryData(key)) qc.setQueryData(key, newTranscript(id));
      qc.setQueryData<Transcript>(key, (tr) => (tr ? setStreaming(tr, true) : tr));
      void invalidateConversationList(qc);
      if (isNew) optsRef.current.onConversation?.(id, t);
    };

    const finish = async () => {
      live.current = null;
      const done: LiveTurn = { ...t, phase: "ended", running: [], cut: t.terminal ? null : entry.reason ?? "broken" };
      commit(done);
      setStopping(false);
      optsRef.current.onEnd?.(done);
      resolveEnded(done);
      if (done.conversationId) {
        void invalidateConversationList(qc);
        await qc.invalidateQueries({ queryKey: keys.conversation(done.conversationId), exact: true });
      }
      // The transcript read back holds everything the turn showed.
      setTurn((cur) => (cur === done ? null : cur));
    };

    const handle = (ev: ChatEvent) => {
      if (ev.event === "conversation" && t.conversationId === null) begin(ev.data.conversation_id);
      // The conversation's feed stores it, unless its events stream brought it first.
      if (t.conversationId) feedOf(qc, t.conversationId).accept(ev);
      commit(advance(t, ev, cached(), Date.now()));
    };

    const { path, body } = requestFor(req);
    let res: Response;
    try {
      res = await send(path, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify(body),
        signal: ctl.signal,
      });
    } catch (err) {
      const aborted = ctl.signal.aborted;
      live.current = null;
      setTurn(null);
      setStopping(false);
      resolveEnded({ ...t, phase: "ended", cut: entry.reason ?? "stopped" });
      // Stopped before the answer came: the server may have started the turn.
      if (aborted) {
        optsRef.current.onEnd?.({ ...t, phase: "ended", cut: entry.reason ?? "stopped" });
        void invalidateConversationList(qc);
        if (t.conversationId) void qc.invalidateQueries({ queryKey: keys.conversation(t.conversationId), exact: true });
      }
      const error = err instanceof ApiError ? err : new ApiError(0, "network_error", err instanceof Error ? err.message : String(err));
      return { ok: false, aborted, error };
    }

    commit({ ...t, phase: "streaming" });
    const id = t.conversationId ?? res.headers.get("X-Conversation-Id");
    if (id) begin(id);

    void (async () => {
      try {
        if (!res.body) throw new Error("the answer has no body");
        for await (const raw of parseSSE(res.body, ctl.signal)) {
          const ev = readChatEvent(raw);
          if (!ev) continue;
          handle(ev);
          if (isTerminal(ev) || ev.event === "conversation.deleted") break;
        }
      } catch {
        // The connection broke, or we aborted: finish says which.
      }
      await finish();
    })();
    return { ok: true, conversationId: t.conversationId, ended };
  }, [qc]);

  /**
   * Stop: cancel the turn on the server. Its stream then ends with the
   * `cancelled` error, which says what was kept; if that does not come soon
   * (or the cancel failed), leave the stream anyway.
   */
  const stop = useCallback(async () => {
    const l = live.current;
    if (!l) return;
    l.reason = "stopped";
    setStopping(true);
    const id = l.turn().conversationId;
    let cancelled = false;
    if (id) {
      try { await api.cancel(id); cancelled = true; } catch { /* no turn running any more, or unreachable: leave anyway */ }
    }
    if (cancelled) await Promise.race([l.ended, new Promise((r) => setTimeout(r, stopGraceMs))]);
    l.ctl.abort();
  }, []);

  /** Leave the stream without cancelling the turn (the person went to another conversation). */
  const detach = useCallback(() => {
    const l = live.current;
    if (!l) return;
    l.reason = "detached";
    l.ctl.abort();
  }, []);

  /** Resolves once no stream of this hook runs. */
  const idle = useCallback((): Promise<void> => (live.current ? live.current.ended.then(() => undefined) : Promise.resolve()), []);

  const running = turn !== null && turn.phase !== "ended";
  return useMemo(() => ({ turn, running, stopping, start, stop, detach, idle }), [turn, running, stopping, start, stop, detach, idle]);
}

export type ChatStream = ReturnType<typeof useChatStream>;
