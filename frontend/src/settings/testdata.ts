// Test data for the settings tests: API objects with every required field of
// the generated types, and a response the test answers when it wants.
import type { AuditEntry, Server, Tool } from "../api/types";
import { jsonResponse } from "../chat/testutil";

export const destructive = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false };
export const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
export const plain = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };

export const server = (over: Partial<Server> = {}): Server => ({
  label: "demo", url: "http://127.0.0.1:8290/mcp", description: "Weather", headers: {},
  default_policy: null, default_policy_locked: false, enabled: true, approval_ttl_seconds: null,
  created_at: "2026-11-21T10:00:00Z", updated_at: "2026-11-21T10:00:00Z",
  tools_refreshed_at: new Date(Date.now() - 3 * 60_000).toISOString(), tools_refresh_error: null, tool_count: 3,
  health: { status: "ok", since: null, last_error: null, checked_at: "2026-11-21T10:00:00Z", ok_at: "2026-11-21T10:00:00Z" }, ...over,
});

export const tool = (name: string, over: Partial<Tool> = {}): Tool => ({
  name, title: name.replace("_", " "), description: `Does ${name}`, input_schema: {},
  annotations: plain, server_label: over.server_label ?? "demo", server_id: over.server_label ?? "demo",
  discovered: true, first_seen_at: null, definition_changed_at: null,
  policy: null, policy_locked: false, user_policy: null, locked: false,
  effective_policy: "never", policy_source: "global", asks_because: null, changed: null,
  policy_updated_at: null, policy_updated_by: null, ...over,
});

export const entry = (e: Partial<AuditEntry>): AuditEntry => ({
  id: 1, at: "2026-11-21T10:25:12.53421Z", actor: "local", actor_id: "usr_1", action: "policy.set",
  server_label: "demo", server_id: "demo", tool_name: "delete_forecast", before: null, after: null, ...e,
});

/** A response the test sends when it wants: `answer(status, body)`. */
export function later() {
  let answer!: (status: number, body: unknown) => void;
  const response = new Promise<Response>((resolve) => {
    answer = (status, body) => resolve(jsonResponse(status, body));
  });
  return { response, answer };
}

export const apiError = (code: string, message: string) => ({ error: { code, message } });
