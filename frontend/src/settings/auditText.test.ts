import { describe as suite, expect, it } from "vitest";
import type { AuditEntry } from "../api/types";
import { describe, partsText } from "./auditText";

const entry = (e: Partial<AuditEntry>): AuditEntry => ({
  id: 1, at: "2026-11-21T10:25:12.53421Z", actor: "local", action: "policy.set",
  server_id: "demo", tool_name: "delete_forecast", before: null, after: null, ...e,
});
const text = (e: Partial<AuditEntry>) => {
  const d = describe(entry(e));
  return [partsText(d.parts), ...d.details].join(" | ");
};

suite("audit entries in plain words", () => {
  it("policy.set and policy.delete", () => {
    expect(text({ before: { policy: "never" }, after: { policy: "always" } })).toBe("Set demo/delete_forecast to Ask (was Auto)");
    expect(text({ before: null, after: { policy: "blocked" } })).toBe("Set demo/delete_forecast to Blocked (had no policy of its own)");
    expect(text({ action: "policy.delete", before: { policy: "always" }, after: null }))
      .toBe("Removed the policy of demo/delete_forecast (was Ask); it uses the default again");
  });

  it("approval.decide", () => {
    const d = describe(entry({
      action: "approval.decide",
      before: { state: "pending", approval_request_id: "mcpr_1" },
      after: { scope: "once", state: "denied", reason: "keep Oslo", remember: true, conversation_id: "conv_1", approval_request_id: "mcpr_1" },
    }));
    expect(partsText(d.parts)).toBe("Denied a call of demo/delete_forecast and blocked the tool from now on");
    expect(d.details).toEqual(["Reason: “keep Oslo”"]);
    expect(d.conversationId).toBe("conv_1");
    expect(text({
      action: "approval.decide", tool_name: "send_alert",
      after: { scope: "conversation", state: "approved", reason: null, remember: false, conversation_id: "c" },
    })).toBe("Allowed demo/send_alert for the rest of a conversation");
    expect(text({ action: "approval.decide", after: { scope: "once", state: "approved", reason: null, remember: false } }))
      .toBe("Approved a call of demo/delete_forecast");
  });

  it("servers", () => {
    expect(text({ action: "server.create", tool_name: null, after: { label: "demo", url: "http://x/mcp", headers: {}, enabled: true, default_policy: null, description: "" } }))
      .toBe("Added server demo | http://x/mcp");
    const srv = { label: "demo", url: "http://x/mcp", headers: { A: "********" }, enabled: true, default_policy: null, description: "" };
    expect(text({ action: "server.update", tool_name: null, before: srv, after: { ...srv, enabled: false } })).toBe("Disabled server demo");
    expect(text({ action: "server.update", tool_name: null, before: srv, after: { ...srv, default_policy: "always" } }))
      .toBe("Set the default of demo to Ask (was the global default)");
    expect(text({ action: "server.update", tool_name: null, before: srv, after: { ...srv, url: "http://y/mcp", headers: { B: "********" } } }))
      .toBe("Changed server demo: URL, headers | URL: http://x/mcp → http://y/mcp | Headers: added B; removed A");
    expect(text({ action: "server.delete", tool_name: null, before: { server: srv, policies: { send_alert: "always", delete_forecast: "blocked" } } }))
      .toBe("Deleted server demo and its 2 tool policies | delete_forecast: Blocked, send_alert: Ask");
  });

  it("server.tools_changed", () => {
    expect(text({ action: "server.tools_changed", tool_name: null, before: { error: null, tools: {} }, after: { error: null, tools: { a: "1", b: "2" } } }))
      .toBe("Discovered 2 tools on demo | a, b");
    expect(text({ action: "server.tools_changed", tool_name: null, before: { error: null, tools: { a: "1", b: "2" } }, after: { error: null, tools: { a: "9", c: "3" } } }))
      .toBe("Tools of demo changed: 1 new, 1 changed, 1 removed | New: c | Definition changed: a | No longer listed: b");
    expect(text({ action: "server.tools_changed", tool_name: null, before: { error: null }, after: { error: "connection refused" } }))
      .toBe("Tool discovery failed for demo | connection refused");
  });

  it("settings.update", () => {
    expect(text({ action: "settings.update", server_id: null, tool_name: null,
      before: { default_policy: "never", local_user: "local" }, after: { default_policy: "always", local_user: "local" } }))
      .toBe("Changed the global default from Auto to Ask");
    expect(text({ action: "settings.update", server_id: null, tool_name: null,
      before: { default_policy: "never", local_user: "local" }, after: { default_policy: "never", local_user: "ann" } }))
      .toBe("Renamed the local user from local to ann");
  });
});
