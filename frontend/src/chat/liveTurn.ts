// The live turn: what a chat stream has shown that the server has not
// stored yet (the message being sent, answer text still streaming), which
// tools run now (approved ones from the moment their answer goes to the
// model, every one from tool.started), and how the stream ended. Pure: the
// stream hook applies each event with advance().
import type { ChatEvent, CompletedEvent, ErrorEvent, FailedEvent } from "../api/events";
import type { Decision, Transcript } from "../api/types";
import { approvalsOf, awaitingRun, type RunningCall } from "./transcript";

export type StreamRequest =
  | { kind: "message"; input: string; conversationId?: string }
  | { kind: "decisions"; conversationId: string; decisions: Decision[] }
  | { kind: "retry"; conversationId: string };

/**
 * Where a live turn came from: a request this page sent, or a turn followed on
 * the conversation's events stream (sent from another tab or client, or
 * running when the page was loaded).
 */
export type TurnOrigin = StreamRequest | { kind: "followed"; conversationId: string; turnId: string };

export type Terminal =
  | { event: "completed"; data: CompletedEvent }
  | { event: "failed"; data: FailedEvent }
  | { event: "error"; data: ErrorEvent };

export interface LiveText { itemId: string; text: string }

export interface LiveTurn {
  request: TurnOrigin;
  /** Known from the request, the X-Conversation-Id header or the conversation event. */
  conversationId: string | null;
  phase: "connecting" | "streaming" | "ended";
  /** The person's message, until the server's user_message item stands for it. */
  pendingInput: string | null;
  /** Answer text per message item, until that item is done. */
  texts: LiveText[];
  /** Tools that run now (their results have not arrived), approved or not. */
  running: RunningCall[];
  terminal: Terminal | null;
  /** Why the stream ended without a terminal event: Stop, leaving the page, or the connection broke. */
  cut: "stopped" | "detached" | "broken" | null;
}

export function newTurn(req: StreamRequest): LiveTurn {
  return {
    request: req, conversationId: req.conversationId ?? null, phase: "connecting",
    pendingInput: req.kind === "message" ? req.input : null, texts: [], running: [], terminal: null, cut: null,
  };
}

/** A turn this page did not start, as its events stream shows it from its first event. */
export function followedTurn(conversationId: string, turnId: string): LiveTurn {
  return {
    request: { kind: "followed", conversationId, turnId }, conversationId, phase: "streaming",
    pendingInput: null, texts: [], running: [], terminal: null, cut: null,
  };
}

/**
 * One event applied to the live turn. tr is the conversation as cached,
 * with this event already applied: it says which approved requests run once
 * every request of their response is decided.
 */
export function advance(t: LiveTurn, ev: ChatEvent, tr: Transcript | undefined, now: number): LiveTurn {
  switch (ev.event) {
    case "conversation": {
      const id = t.conversationId ?? ev.data.conversation_id;
      // A retry that sends recorded decisions runs the approved tools that never reached the model.
      const running = t.request.kind === "retry" && ev.data.kind === "decisions" && tr ? awaitingRun(tr, null, now) : t.running;
      return { ...t, conversationId: id, running };
    }
    case "text.delta": {
      const { item_id: itemId, delta } = ev.data;
      const has = t.texts.some((x) => x.itemId === itemId);
      return { ...t, texts: has ? t.texts.map((x) => (x.itemId === itemId ? { ...x, text: x.text + delta } : x)) : [...t.texts, { itemId, text: delta }] };
    }
    case "item.done": {
      const item = ev.data.item;
      const finished = (r: RunningCall) => (r.itemId !== undefined && r.itemId === item.id)
        || (r.approvalId !== undefined && r.approvalId === item.approval_request_id);
      return {
        ...t,
        pendingInput: item.type === "user_message" ? null : t.pendingInput,
        texts: t.texts.filter((x) => x.itemId !== item.id),
        running: item.type === "mcp_call" ? t.running.filter((r) => !finished(r)) : t.running,
      };
    }
    case "tool.started": {
      const d = ev.data;
      const known = { itemId: d.item_id, responseId: d.response_id, upstream: d.upstream_label };
      // An approved call counted as running since its answer went out: now the provider names it.
      if (d.approval_request_id && t.running.some((r) => r.approvalId === d.approval_request_id)) {
        return { ...t, running: t.running.map((r) => (r.approvalId === d.approval_request_id ? { ...r, ...known } : r)) };
      }
      if (t.running.some((r) => r.itemId === d.item_id)) return t;
      const call: RunningCall = { ...known, tool: d.tool_name, server: d.server_label, since: now, ...(d.approval_request_id ? { approvalId: d.approval_request_id } : {}) };
      return { ...t, running: [...t.running, call] };
    }
    case "approval.required":
    case "notice":
    case "conversation.deleted":
      return t;
    case "decision.recorded": {
      const d = ev.data;
      if (!tr || d.pending_approval_ids?.length) return t;
      // Every request of that response is decided: the answers go to the model, and the approved tools run.
      const asked = approvalsOf(tr).find((a) => a.approval_request_id === d.approval_request_id);
      const run = awaitingRun(tr, asked?.response_id ?? null, now).filter((r) => !t.running.some((x) => x.approvalId === r.approvalId));
      return run.length ? { ...t, running: [...t.running, ...run] } : t;
    }
    case "completed":
    case "failed":
    case "error":
      return { ...t, terminal: { event: ev.event, data: ev.data } as Terminal };
  }
}
