// Test helpers: a fake fetch that routes by method and path, and SSE bodies.
import { vi } from "vitest";
import type { Approval, Conversation, Item, Transcript } from "../api/types";

let lastId = 0;

/**
 * An SSE body. Event ids are per conversation and never start again (a
 * page skips an id it has seen), so they go on from the last body's unless
 * from says where to start.
 */
export function sse(events: [string, unknown][], from = lastId + 1): string {
  let s = ": ping\n\n";
  events.forEach(([name, data], i) => { s += frame(from + i, name, data); });
  lastId = Math.max(lastId, from + events.length - 1);
  return s;
}

/** One event of an SSE body. */
export const frame = (id: number, name: string, data: unknown) => `id: ${id}\nevent: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

/** A body whose chunks the test pushes, and closes, when it wants. */
export function controlledBody() {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const enc = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({ start(c) { ctl = c; } });
  return {
    stream,
    push: (s: string) => ctl.enqueue(enc.encode(s)),
    close: () => ctl.close(),
  };
}

export function sseResponse(body: string | ReadableStream<Uint8Array>, headers: Record<string, string> = {}) {
  return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream; charset=utf-8", ...headers } });
}

export function jsonResponse(status: number, body: unknown) {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

/** A conversation's events stream (GET …/events), or the settings': unless a test routes it, it stays open and says nothing. */
const eventsRoute = /^\/api\/(conversations\/[^/?]+|settings|approvals)\/events(\?|$)/;
const quietEvents: Handler = () => sseResponse(controlledBody().stream);

type Handler = (req: { method: string; path: string; body: unknown; init: RequestInit }) => Response | Promise<Response>;

/** Installs a fetch that answers with the first route matching "METHOD /path". */
export function mockFetch(routes: Record<string, Handler>) {
  const calls: { method: string; path: string; body: unknown }[] = [];
  const fn = vi.fn(async (input: RequestInfo | URL, init: RequestInit = {}) => {
    // The generated client (openapi-fetch) passes a Request; the stream hook a path and init.
    let method: string, path: string, body: unknown;
    if (input instanceof Request) {
      method = input.method.toUpperCase();
      const u = new URL(input.url);
      path = u.pathname + u.search;
      const text = await input.clone().text();
      body = text ? JSON.parse(text) : undefined;
      init = { method, signal: input.signal, headers: input.headers, body: text || undefined };
    } else {
      method = (init.method ?? "GET").toUpperCase();
      path = String(input);
      body = typeof init.body === "string" && init.body ? JSON.parse(init.body) : undefined;
    }
    calls.push({ method, path, body });
    const h = routes[`${method} ${path}`] ?? (method === "GET" && eventsRoute.test(path) ? quietEvents : undefined);
    if (!h) return jsonResponse(404, { error: { code: "not_found", message: `no route ${method} ${path}` } });
    if (init.signal?.aborted) throw new DOMException("aborted", "AbortError");
    return h({ method, path, body, init });
  });
  vi.stubGlobal("fetch", fn);
  return { fn, calls };
}

// ---- the server's objects, as tests need them ----

export const info = { offline: true, model: "gpt-5-mini", tool_layout: "default", base_url: "", version: "dev" };

export function conversation(over: Partial<Conversation> = {}): Conversation {
  return { id: "conv_1", title: "Weather chores", created_at: "t", updated_at: "t", last_response_id: "resp_1", streaming: false, pending_approvals: 0, tools: { servers: {} }, ...over };
}

export function approval(id: string, tool: string, over: Partial<Approval> = {}): Approval {
  return {
    approval_request_id: id, conversation_id: "conv_1", response_id: "resp_1", server_label: "demo", upstream_label: "demo",
    tool_name: tool, arguments: { city: "Berlin" }, redacted: [], annotations: {}, asks_because: { policy: "always", source: "tool" },
    requested_at: "t", state: "pending", decided_at: null, decided_by: null, decided_by_id: null, reason: null, scope: null, remember: false, answered_in: null, expires_at: null,
    correction: null, corrects: null,
    ...over,
  };
}

export const approvalItem = (seq: number, a: Approval): Item => ({
  seq, type: "mcp_approval_request", id: a.approval_request_id, response_id: a.response_id, created_at: "t",
  server_label: a.server_label, upstream_label: a.upstream_label, name: a.tool_name, arguments: a.arguments, approval: a,
});

export const callItem = (seq: number, tool: string, over: Partial<Extract<Item, { type: "mcp_call" }>> = {}): Item => ({
  seq, type: "mcp_call", id: `mcp_${seq}`, response_id: "resp_2", created_at: "t", server_label: "demo", upstream_label: "demo",
  name: tool, arguments: { city: "Berlin" }, output: "done", allowed_by: { kind: "approval" }, ...over,
});

export const userItem = (seq: number, text: string): Item => ({ seq, type: "user_message", id: `u${seq}`, created_at: "t", text });

/** A transcript of conv_1 whose pending approvals are those of its items that are pending. */
export function transcript(items: Item[], over: Partial<Conversation> = {}): Transcript {
  const pending = items.flatMap((it) => (it.type === "mcp_approval_request" && it.approval.state === "pending" ? [it.approval] : []));
  return { conversation: conversation({ pending_approvals: pending.length, ...over }), items, pending_approvals: pending };
}

/** The SSE events that open a turn. */
export const opened = (kind: "message" | "decisions", id = "conv_1"): [string, unknown] =>
  ["conversation", { conversation_id: id, turn_id: "turn_x", kind, offline: true, model: "m" }];

export const recordedEvent = (a: Approval, over: Record<string, unknown> = {}): [string, unknown] => ["decision.recorded", {
  approval_request_id: a.approval_request_id, server_label: a.server_label, tool_name: a.tool_name, state: "approved", reason: null,
  scope: "once", remember: false, policy_changed: null, decided_at: "t", pending_approval_ids: [], ...over,
}];
