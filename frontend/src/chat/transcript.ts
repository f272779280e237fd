// The conversation as the server stores it (GET /api/conversations/{id}),
// and pure updates that apply what a chat stream reports to it, exactly as
// the server records it (docs/sse-events.md): the stream keeps the query
// cache in step until the transcript is read back at the end of the turn.
import type { ChatEvent, DecisionRecordedEvent, TurnEndEvent } from "../api/events";
import type { Approval, ApprovalRequestItem, CallItem, Item, Transcript } from "../api/types";

const lastSeq = (t: Transcript) => t.items.reduce((m, it) => Math.max(m, it.seq), 0);

/** Before the server has been read: a conversation the stream has just created. */
export function newTranscript(id: string, now = new Date().toISOString()): Transcript {
  return {
    conversation: { id, title: "", created_at: now, updated_at: now, last_response_id: null, streaming: true, pending_approvals: 0, tools: { servers: {} } },
    items: [],
    pending_approvals: [],
  };
}

export function setStreaming(t: Transcript, streaming: boolean): Transcript {
  return t.conversation.streaming === streaming ? t : { ...t, conversation: { ...t.conversation, streaming } };
}

/** item.done: the item as stored; the same item again replaces it. */
export function withItem(t: Transcript, item: Item): Transcript {
  const i = t.items.findIndex((x) => (item.id ? x.id === item.id : x.seq === item.seq));
  const items = t.items.slice();
  if (i >= 0) items[i] = item;
  else items.push(item);
  return { ...t, items };
}

const approvalItem = (t: Transcript, a: Approval): ApprovalRequestItem => ({
  seq: lastSeq(t) + 1, type: "mcp_approval_request", id: a.approval_request_id, response_id: a.response_id, created_at: a.requested_at,
  server_label: a.server_label, upstream_label: a.upstream_label, name: a.tool_name, arguments: a.arguments, approval: a,
});

/** approval.required: a pending request, stored as the next item of the transcript. */
export function withApproval(t: Transcript, a: Approval): Transcript {
  const id = a.approval_request_id;
  if (t.items.some((x) => x.id === id) || t.pending_approvals.some((p) => p.approval_request_id === id)) return t;
  const pending = [...t.pending_approvals, a];
  return {
    ...t,
    conversation: { ...t.conversation, pending_approvals: pending.length },
    items: [...t.items, approvalItem(t, a)],
    pending_approvals: pending,
  };
}

/**
 * A request's new state, wherever the transcript holds it: in its item, and
 * no longer among the pending ones once decided (a pending request the items
 * lacked keeps its place in the transcript as an item).
 */
function settle(t: Transcript, id: string, change: (a: Approval) => Approval): Transcript {
  const held = t.items.some((it) => it.type === "mcp_approval_request" && it.approval.approval_request_id === id);
  let items = t.items.map((it) => (it.type === "mcp_approval_request" && it.approval.approval_request_id === id
    ? { ...it, approval: change(it.approval) } : it));
  const only = held ? undefined : t.pending_approvals.find((a) => a.approval_request_id === id);
  if (only) items = [...items, approvalItem(t, change(only))];
  const pending = t.pending_approvals.flatMap((a) => {
    if (a.approval_request_id !== id) return [a];
    const next = change(a);
    return next.state === "pending" ? [next] : [];
  });
  return { ...t, conversation: { ...t.conversation, pending_approvals: pending.length }, items, pending_approvals: pending };
}

/** decision.recorded: the request's new state, and who decided. */
export function withDecision(t: Transcript, d: DecisionRecordedEvent): Transcript {
  return settle(t, d.approval_request_id, (a) => ({
    ...a, state: d.state, reason: d.reason, scope: d.scope, remember: d.remember, decided_at: d.decided_at,
    ...(d.correction !== undefined ? { correction: d.correction } : {}),
    ...(d.decided_by !== undefined ? { decided_by: d.decided_by, decided_by_id: d.decided_by_id ?? null } : {}),
    ...(d.rules ? { rules: d.rules } : {}),
    ...(d.stopped !== undefined ? { stopped: d.stopped } : {}),
  }));
}

/** The request as the server says it is now (a 409's details.approval): decided elsewhere, superseded, … */
export function withApprovalState(t: Transcript, current: Approval): Transcript {
  return settle(t, current.approval_request_id, (a) => ({ ...a, ...current }));
}

/**
 * failed / error: how the server ends a turn that did not complete. Tool
 * calls that began and never finished are kept as interrupted calls (they
 * may have run), the text of messages that never finished as partial
 * messages, then an error item; the turn is over.
 */
export function withTurnEnd(t: Transcript, end: TurnEndEvent, partial: { itemId: string; text: string }[], running: RunningCall[] = [],
  now = new Date().toISOString()): Transcript {
  let seq = lastSeq(t);
  const items: Item[] = t.items.slice();
  for (const r of running) {
    if (r.itemId && !items.some((x) => x.id === r.itemId)) items.push(interruptedCall(r, ++seq, now));
  }
  for (const p of partial) {
    if (!items.some((x) => x.id === p.itemId)) items.push({ seq: ++seq, type: "message", id: p.itemId, created_at: now, text: p.text, partial: true });
  }
  const turnError = { code: end.code, message: end.message, retryable: "retryable" in end ? end.retryable : false };
  items.push({ seq: ++seq, type: "error", created_at: now, turn_error: turnError });
  return { ...t, conversation: { ...t.conversation, streaming: false }, items };
}

/** What one stream event stores (terminal events: see withTurnEnd, which needs the text that streamed). */
export function withEvent(t: Transcript, ev: ChatEvent): Transcript {
  switch (ev.event) {
    case "item.done":
    case "notice": return withItem(t, ev.data.item);
    case "approval.required": return withApproval(t, ev.data);
    case "decision.recorded": return withDecision(t, ev.data);
    default: return t;
  }
}

/** Every approval request of the transcript, in order: the items', then pending ones the items lack. */
export function approvalsOf(t: Transcript): Approval[] {
  const out: Approval[] = [];
  const seen = new Set<string>();
  for (const it of t.items) {
    if (it.type === "mcp_approval_request") {
      out.push(it.approval);
      seen.add(it.approval.approval_request_id);
    }
  }
  for (const a of t.pending_approvals) if (!seen.has(a.approval_request_id)) out.push(a);
  return out;
}

/** The call that ran after an approval, when the transcript has it. */
export function callOf(t: Transcript, approvalId: string): CallItem | undefined {
  return t.items.find((it): it is CallItem => it.type === "mcp_call" && it.approval_request_id === approvalId);
}

/**
 * A tool call running now, whose result has not arrived: one the provider
 * said it started (tool.started: itemId), or an approved request sent to the
 * model, which runs it first thing (approvalId; itemId once it starts).
 */
export interface RunningCall {
  /** The approval request it answers; absent for a call that runs without asking. */
  approvalId?: string;
  /** The provider's mcp_call item, once it said the call started. */
  itemId?: string;
  responseId?: string;
  tool: string;
  server: string;
  upstream?: string;
  since: number;
}

/** A started call the turn ended before it finished, as the server stores it: it may have run. */
function interruptedCall(r: RunningCall, seq: number, now: string): CallItem {
  return {
    seq, type: "mcp_call", id: r.itemId, response_id: r.responseId, created_at: now, server_label: r.server,
    upstream_label: r.upstream ?? r.server, name: r.tool, approval_request_id: r.approvalId, interrupted: true,
  };
}

/** A call that began but never reported a result: the provider may have run it. */
export const isInterrupted = (it: CallItem) => it.interrupted === true;

/**
 * The approved requests that go to the model now and run there: those of the
 * response that asked (or, without one, of every response) that have no call
 * yet and were never sent before (answered_in: an earlier response had them).
 */
export function awaitingRun(t: Transcript, responseId: string | null, since: number): RunningCall[] {
  return approvalsOf(t)
    .filter((a) => (responseId === null || a.response_id === responseId) && a.state === "approved" && !a.answered_in
      && !callOf(t, a.approval_request_id))
    .map((a) => ({ approvalId: a.approval_request_id, tool: a.tool_name, server: a.server_label, since }));
}

/**
 * Whether an approved tool ran, from what the server recorded: its call is in
 * the transcript ("ran"); it started but the turn ended before its result
 * ("interrupted": it may have run); the approval never reached the model's
 * provider ("not_sent": it goes with Retry or the next message); or it
 * reached it (or may have) but no result came back, e.g. after Stop
 * ("unknown": the provider may have run it; it is never sent again).
 */
export type Outcome = "ran" | "interrupted" | "not_sent" | "unknown" | "not_run" | "waiting";

export function outcomeOf(t: Transcript, a: Approval): Outcome {
  if (a.state !== "approved") return "not_run";
  const call = callOf(t, a.approval_request_id);
  if (call) return isInterrupted(call) ? "interrupted" : "ran";
  if (a.answered_in) return "unknown";
  // Nothing goes to the model while other requests of the response wait for a decision.
  const open = approvalsOf(t).some((x) => x.response_id === a.response_id && x.state === "pending");
  return open ? "waiting" : "not_sent";
}
