// The chat stream's events: a typed union mirroring docs/sse-events.md.
// Unknown event names are skipped (the contract says more may be added).
import type { Approval, ApprovalState, Item, NoticeItem, Policy, RuleCheck } from "./types";

export interface ConversationEvent {
  conversation_id: string;
  turn_id: string;
  kind: "message" | "decisions";
  offline: boolean;
  model: string;
}
export interface TextDeltaEvent { item_id: string; response_id: string; delta: string }
export interface ItemDoneEvent { item: Item }
/** The provider began a tool call, asked or not; its item.done (same item_id) follows. */
export interface ToolStartedEvent {
  item_id: string;
  response_id: string;
  server_label: string;
  upstream_label: string;
  tool_name: string;
  /** The approval request the call answers; null when it runs without asking. */
  approval_request_id: string | null;
  started_at: string;
}
export interface DecisionRecordedEvent {
  approval_request_id: string;
  server_label: string;
  tool_name: string;
  state: Exclude<ApprovalState, "pending">;
  reason: string | null;
  scope: "once" | "conversation" | "hour" | "server" | "everything" | null;
  remember: boolean;
  /** A denial with a correction: the arguments the model was asked to use instead (redacted); null otherwise. */
  correction?: Record<string, unknown> | null;
  /** layer "workspace": an admin's wider decision set a default (server_label "" for the global one, tool_name ""). */
  policy_changed: { server_label: string; tool_name: string; policy: Policy; layer: "user" | "workspace" } | null;
  /** A person's stop denied it (this request's decision, or another's of the same response): the model got no turn. */
  stopped?: boolean;
  decided_at: string;
  /** Who decided (email and id); null when Toolgate closed the request itself. */
  decided_by?: string | null;
  decided_by_id?: string | null;
  pending_approval_ids: string[] | null;
  /** What the argument rules made of the request; null when none apply. */
  rules?: RuleCheck | null;
}
export interface CompletedEvent {
  response_id: string | null;
  pending_approvals: number;
  pending_approval_ids: string[] | null;
  sent: boolean;
}
export interface FailedEvent { response_id: string; code: "response_failed" | "response_incomplete"; message: string }
export interface ErrorEvent { code: string; message: string; retryable: boolean }
/** A notice item stored in the transcript (a server left out, provider state lost, …). */
export interface NoticeEvent { item: NoticeItem }
/** The conversation was deleted: its event stream ends. */
export interface DeletedEvent { conversation_id: string }
/** How a turn ends that did not complete: the `failed` or `error` payload. */
export type TurnEndEvent = FailedEvent | ErrorEvent;

export type ChatEvent =
  | { event: "conversation"; id: number; data: ConversationEvent }
  | { event: "text.delta"; id: number; data: TextDeltaEvent }
  | { event: "item.done"; id: number; data: ItemDoneEvent }
  | { event: "tool.started"; id: number; data: ToolStartedEvent }
  | { event: "approval.required"; id: number; data: Approval }
  | { event: "decision.recorded"; id: number; data: DecisionRecordedEvent }
  | { event: "completed"; id: number; data: CompletedEvent }
  | { event: "failed"; id: number; data: FailedEvent }
  | { event: "error"; id: number; data: ErrorEvent }
  | { event: "notice"; id: number; data: NoticeEvent }
  | { event: "conversation.deleted"; id: number; data: DeletedEvent };

export type ChatEventName = ChatEvent["event"];

const known: ReadonlySet<string> = new Set<ChatEventName>([
  "conversation", "text.delta", "item.done", "tool.started", "approval.required",
  "decision.recorded", "completed", "failed", "error", "notice", "conversation.deleted",
]);

export const isTerminal = (e: ChatEvent) => e.event === "completed" || e.event === "failed" || e.event === "error";

/** A raw server-sent event: what the parser yields before typing. */
export interface RawEvent { id: string; event: string; data: string }

/**
 * Types a raw event; returns null for comments-only frames and unknown names.
 * id: the event's id, per conversation and persisted, so a client can resume
 * after it and skip an event it already applied; 0 when it had none.
 */
export function toChatEvent(raw: RawEvent): ChatEvent | null {
  if (!known.has(raw.event)) return null;
  const id = Number(raw.id);
  return { event: raw.event, id: Number.isSafeInteger(id) && id > 0 ? id : 0, data: JSON.parse(raw.data || "{}") } as ChatEvent;
}

/** The typed event a stream delivers, or null for one to skip: an unknown name, or data that is not JSON. */
export function readChatEvent(raw: RawEvent): ChatEvent | null {
  try { return toChatEvent(raw); } catch { return null; }
}

/**
 * Reads a text/event-stream body and yields each event. It follows the
 * WHATWG framing (field lines, blank line ends an event, ":" comments such as
 * heartbeats ignored, CRLF/CR/LF line ends, multi-line data joined by "\n").
 */
export async function* parseSSE(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<RawEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let ev: RawEvent = { id: "", event: "", data: "" };
  let hasData = false;
  const onAbort = () => { reader.cancel().catch(() => {}); };
  signal?.addEventListener("abort", onAbort);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        // At the end, a lone "\r" is a whole line end: no "\n" can follow it.
        if (!buf.endsWith("\r")) return;
        buf += "\n";
      } else {
        buf += decoder.decode(value, { stream: true });
      }
      for (;;) {
        const m = /\r\n|\r|\n/.exec(buf);
        if (!m) break;
        // A lone "\r" at the very end may be the first half of "\r\n".
        if (m[0] === "\r" && m.index === buf.length - 1) break;
        const line = buf.slice(0, m.index);
        buf = buf.slice(m.index + m[0].length);
        if (line === "") {
          if (hasData || ev.event) yield { ...ev, event: ev.event || "message" };
          ev = { id: ev.id, event: "", data: "" };
          hasData = false;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") { ev.data = hasData ? ev.data + "\n" + value : value; hasData = true; }
        else if (field === "event") ev.event = value;
        else if (field === "id") ev.id = value;
      }
      if (done) return;
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    try { reader.releaseLock(); } catch { /* a read was still pending */ }
  }
}
