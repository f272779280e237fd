// One hook owns one chat stream: a POST answered with text/event-stream, read
// with parseSSE into typed events, and an AbortController to leave it. The
// server owns the conversation; this keeps only the live turn (what arrived
// since the stream opened) until the caller has reloaded the transcript.
import { useCallback, useEffect, useRef, useState } from "react";
import { ApiError, api, send, streams } from "../api/client";
import {
  isTerminal, parseSSE, toChatEvent,
  type ChatEvent, type CompletedEvent, type DecisionRecordedEvent, type ErrorEvent, type FailedEvent,
} from "../api/events";
import type { Approval, Decision, Item } from "../api/types";

export type StreamRequest =
  | { kind: "message"; input: string; conversationId?: string }
  | { kind: "decisions"; conversationId: string; decisions: Decision[] }
  | { kind: "retry"; conversationId: string };

export type Terminal =
  | { event: "completed"; data: CompletedEvent }
  | { event: "failed"; data: FailedEvent }
  | { event: "error"; data: ErrorEvent };

/** What the running turn has shown so far, in arrival order. */
export type LiveEntry =
  | { type: "pending_user"; key: string; text: string }
  | { type: "item"; key: string; item: Item }
  | { type: "text"; key: string; itemId: string; text: string }
  | { type: "approval"; key: string; approval: Approval };

export interface LiveTurn {
  /** Counts turns started by this hook. */
  no: number;
  request: StreamRequest;
  /** Known from the request, the X-Conversation-Id header or the conversation event. */
  conversationId: string | null;
  phase: "connecting" | "streaming" | "ended";
  entries: LiveEntry[];
  terminal: Terminal | null;
  /** Why the stream ended without a terminal event: Stop, leaving the page, or the connection broke. */
  cut: "stopped" | "detached" | "broken" | null;
}

export type StartResult =
  | { ok: true; conversationId: string | null }
  | { ok: false; error: ApiError; aborted: boolean };

export interface ChatStreamOptions {
  /** The stream's conversation became known (a new conversation's id arrives with the headers). */
  onConversation?(id: string): void;
  /** The stream ended: a terminal event, Stop, or the connection broke. */
  onEnd?(turn: LiveTurn): void;
}

function requestFor(req: StreamRequest) {
  switch (req.kind) {
    case "message": return streams.message(req.input, req.conversationId);
    case "decisions": return streams.decisions(req.conversationId, req.decisions);
    case "retry": return streams.retry(req.conversationId);
  }
}

/** Applies one event to the live turn (pure). */
export function applyEvent(t: LiveTurn, ev: ChatEvent): LiveTurn {
  switch (ev.event) {
    case "conversation":
      return t.conversationId ? t : { ...t, conversationId: ev.data.conversation_id };
    case "text.delta": {
      const i = t.entries.findIndex((e) => e.type === "text" && e.itemId === ev.data.item_id);
      const entries = t.entries.slice();
      if (i >= 0) {
        const e = entries[i] as Extract<LiveEntry, { type: "text" }>;
        entries[i] = { ...e, text: e.text + ev.data.delta };
      } else {
        entries.push({ type: "text", key: `text-${ev.data.item_id}`, itemId: ev.data.item_id, text: ev.data.delta });
      }
      return { ...t, entries };
    }
    case "item.done": {
      const item = ev.data.item;
      const entry: LiveEntry = { type: "item", key: `item-${item.seq}-${item.id ?? ""}`, item };
      const entries = t.entries.slice();
      let i = -1;
      if (item.type === "user_message") i = entries.findIndex((e) => e.type === "pending_user");
      if (i < 0 && item.type === "message" && item.id) i = entries.findIndex((e) => e.type === "text" && e.itemId === item.id);
      if (i < 0) i = entries.findIndex((e) => e.type === "item" && e.item.seq === item.seq);
      if (i >= 0) entries[i] = entry;
      else entries.push(entry);
      return { ...t, entries };
    }
    case "approval.required": {
      const id = ev.data.approval_request_id;
      if (t.entries.some((e) => e.type === "approval" && e.approval.approval_request_id === id)) return t;
      return { ...t, entries: [...t.entries, { type: "approval", key: `approval-${id}`, approval: ev.data }] };
    }
    case "decision.recorded":
      return t;
    case "completed":
    case "failed":
    case "error":
      return { ...t, terminal: { event: ev.event, data: ev.data } as Terminal };
  }
}

export function useChatStream(options: ChatStreamOptions = {}) {
  const optsRef = useRef(options);
  useEffect(() => { optsRef.current = options; });

  const [turn, setTurn] = useState<LiveTurn | null>(null);
  const [stopping, setStopping] = useState(false);
  /** Decisions recorded by streams of this page (they are final, so they can outlive their turn). */
  const [recorded, setRecorded] = useState<Record<string, DecisionRecordedEvent>>({});
  const turnRef = useRef<LiveTurn | null>(null);
  const ctlRef = useRef<AbortController | null>(null);
  const endReason = useRef<"stopped" | "detached" | null>(null);
  const counter = useRef(0);

  // Leaving the page leaves the stream; the turn goes on on the server.
  useEffect(() => () => {
    endReason.current = "detached";
    ctlRef.current?.abort();
  }, []);

  const start = useCallback(async (req: StreamRequest): Promise<StartResult> => {
    if (ctlRef.current) {
      return { ok: false, aborted: false, error: new ApiError(409, "turn_in_progress", "A response is still streaming. Wait for it to finish, or stop it.") };
    }
    const ctl = new AbortController();
    ctlRef.current = ctl;
    endReason.current = null;
    setStopping(false);
    let t: LiveTurn = {
      no: ++counter.current,
      request: req,
      conversationId: req.conversationId ?? null,
      phase: "connecting",
      entries: req.kind === "message" ? [{ type: "pending_user", key: "pending-user", text: req.input }] : [],
      terminal: null,
      cut: null,
    };
    const commit = (next: LiveTurn) => { t = next; turnRef.current = next; setTurn(next); };
    commit(t);

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
      ctlRef.current = null;
      const aborted = ctl.signal.aborted;
      turnRef.current = null;
      setTurn(null);
      setStopping(false);
      // Stopped before the answer came: the server may have started the turn.
      if (aborted) optsRef.current.onEnd?.({ ...t, phase: "ended", cut: endReason.current ?? "stopped" });
      const error = err instanceof ApiError ? err : new ApiError(0, "network_error", err instanceof Error ? err.message : String(err));
      return { ok: false, aborted, error };
    }

    const headerId = res.headers.get("X-Conversation-Id");
    commit({ ...t, phase: "streaming", conversationId: t.conversationId ?? headerId });
    if (t.conversationId) optsRef.current.onConversation?.(t.conversationId);

    void (async () => {
      try {
        if (!res.body) throw new Error("the answer has no body");
        for await (const raw of parseSSE(res.body, ctl.signal)) {
          let ev: ChatEvent | null;
          try { ev = toChatEvent(raw); } catch { continue; } // data that is not JSON: skip the event
          if (!ev) continue;
          if (ev.event === "decision.recorded") {
            const d = ev.data;
            setRecorded((r) => ({ ...r, [d.approval_request_id]: d }));
          }
          const known = t.conversationId;
          commit(applyEvent(t, ev));
          if (!known && t.conversationId) optsRef.current.onConversation?.(t.conversationId);
          if (isTerminal(ev)) break;
        }
      } catch {
        // The connection broke, or we aborted: decided below.
      }
      ctlRef.current = null;
      commit({ ...t, phase: "ended", cut: t.terminal ? null : endReason.current ?? "broken" });
      setStopping(false);
      optsRef.current.onEnd?.(t);
    })();
    return { ok: true, conversationId: t.conversationId };
  }, []);

  /** Stop: cancel the turn on the server, and leave the stream. */
  const stop = useCallback(async () => {
    const ctl = ctlRef.current;
    const cur = turnRef.current;
    if (!ctl) return;
    endReason.current = "stopped";
    setStopping(true);
    if (cur?.conversationId) {
      try { await api.cancel(cur.conversationId); } catch { /* no turn running any more, or unreachable: leave anyway */ }
    }
    ctl.abort();
  }, []);

  /** Leave the stream without cancelling the turn (the person went to another conversation). */
  const detach = useCallback(() => {
    if (!ctlRef.current) return;
    endReason.current = "detached";
    ctlRef.current.abort();
  }, []);

  /** Drops the ended turn once the transcript has been reloaded. */
  const clear = useCallback((no: number) => {
    if (turnRef.current?.no === no && turnRef.current.phase === "ended") {
      turnRef.current = null;
      setTurn(null);
    }
  }, []);

  const resetRecorded = useCallback(() => setRecorded({}), []);
  const isRunning = useCallback(() => ctlRef.current !== null, []);
  const current = useCallback(() => turnRef.current, []);

  const running = turn !== null && turn.phase !== "ended";
  return { turn, running, stopping, recorded, start, stop, detach, clear, resetRecorded, isRunning, current };
}
