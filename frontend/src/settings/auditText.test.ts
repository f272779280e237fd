import { describe as suite, expect, it } from "vitest";
import type { AuditEntry } from "../api/types";
import i18n from "../i18n";
import { describe, partsText } from "./auditText";
import { entry } from "./testdata";

const text = (e: Partial<AuditEntry>, lng = "en") => {
  const d = describe(entry(e), i18n.getFixedT(lng, "settings"));
  return [partsText(d.parts), ...d.details].join(" | ");
};

suite("audit entries in plain words", () => {
  it("policy.set and policy.delete", () => {
    expect(text({ before: { policy: "never" }, after: { policy: "always" } })).toBe("Set demo/delete_forecast to Ask (was Auto)");
    expect(text({ before: null, after: { policy: "blocked" } })).toBe("Set demo/delete_forecast to Blocked (had no policy of its own)");
    expect(text({ before: null, after: { policy: "blocked", locked: true } }))
      .toBe("Set demo/delete_forecast to Blocked (had no policy of its own) | Locked: personal policies cannot loosen it");
    expect(text({ before: { policy: "always" }, after: { policy: "never", layer: "user" } }))
      .toBe("Set the personal policy for demo/delete_forecast to Auto (was Ask)");
    expect(text({ action: "policy.delete", before: { policy: "always" }, after: null }))
      .toBe("Removed the policy of demo/delete_forecast (was Ask); it uses the default again");
  });

  it("policy.clear, per layer, in English and German", () => {
    const cleared = (layer: string): Partial<AuditEntry> => ({ action: "policy.clear", tool_name: null,
      before: { layer, policies: { get_forecast: "never", delete_forecast: "blocked" } }, after: { layer, policies: {} } });
    expect(text(cleared("workspace")))
      .toBe("Removed 2 workspace tool policies of demo; its tools use the defaults again | delete_forecast: Blocked, get_forecast: Auto");
    expect(text(cleared("user"))).toBe("Removed 2 personal tool policies of demo | delete_forecast: Blocked, get_forecast: Auto");
    expect(text(cleared("user"), "de")).toMatch(/^2 persönliche Tool-Richtlinien von demo entfernt/);
  });

  it("links the tool where the sentence names it", () => {
    const d = describe(entry({ before: { policy: "never" }, after: { policy: "always" } }), i18n.getFixedT("en", "settings"));
    expect(d.parts).toEqual(["Set ", { server: "demo", tool: "delete_forecast" }, " to Ask (was Auto)"]);
  });

  it("tool.call receipts, in English and German", () => {
    const receipt = {
      conversation_id: "conv_1", response_id: "resp_1", call_id: "mcp_1", approval_request_id: null,
      server_label: "demo", tool_name: "delete_forecast", arguments: { city: "Oslo", token: "[redacted]" },
      arguments_text: '{"city":"Oslo","token":"[redacted]"}', redacted: ["token"], arguments_sha256: "aa11",
      allowed_by: { kind: "policy", policy: "never", source: "tool" }, decided_by: null, decided_by_id: null,
      outcome: "output", output_sha256: "bb22", error: null,
    };
    const d = describe(entry({ action: "tool.call", before: null, after: receipt }), i18n.getFixedT("en", "settings"));
    expect(partsText(d.parts)).toBe("Ran demo/delete_forecast");
    expect(d.details).toEqual([
      'Arguments: {"city":"Oslo","token":"[redacted]"}', "Hidden: token",
      "Allowed by the policy Auto (set for this tool)", "SHA-256 of the arguments: aa11; of the output: bb22",
    ]);
    expect(d.conversationId).toBe("conv_1");
    expect(d.tone).toBeUndefined();
    const approved = { ...receipt, redacted: [], approval_request_id: "mcpr_1", allowed_by: { kind: "approval" }, decided_by: "ana@example.com",
      outcome: "error", output_sha256: null, error: { type: "mcp_tool_execution_error", message: "no forecast for Atlantis" } };
    expect(text({ action: "tool.call", before: null, after: approved })).toBe(
      'Ran demo/delete_forecast; it failed | Arguments: {"city":"Oslo","token":"[redacted]"} | Approved by ana@example.com'
      + " | Error: no forecast for Atlantis | SHA-256 of the arguments: aa11; of the output: none");
    expect(text({ action: "tool.call", before: null, after: approved }, "de")).toBe(
      'demo/delete_forecast ausgeführt; fehlgeschlagen | Argumente: {"city":"Oslo","token":"[redacted]"} | Genehmigt von ana@example.com'
      + " | Fehler: no forecast for Atlantis | SHA-256 der Argumente: aa11; der Ausgabe: keine");
    expect(text({ action: "tool.call", before: null, after: { ...receipt, redacted: [], allowed_by: { kind: "conversation" } } }))
      .toContain("Allowed for the conversation");
  });

  it("approval.decide", () => {
    const d = describe(entry({
      action: "approval.decide",
      before: { state: "pending", approval_request_id: "mcpr_1" },
      after: { scope: "once", state: "denied", reason: "keep Oslo", remember: true, conversation_id: "conv_1", approval_request_id: "mcpr_1" },
    }), i18n.getFixedT("en", "settings"));
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

  it("says who or what allowed each call: person, rule (which one), hook, grant (its id), policy; never unknown", () => {
    const receipt = {
      conversation_id: "conv_1", response_id: "resp_1", call_id: "mcp_1", approval_request_id: "mcpr_1",
      server_label: "demo", tool_name: "delete_forecast", arguments: { city: "Oslo" }, arguments_text: '{"city":"Oslo"}', redacted: [],
      arguments_sha256: "aa11", decided_by: null, decided_by_id: null, outcome: "output", output_sha256: "bb22", error: null,
    };
    const allowed = (allowed_by: unknown, lng = "en") =>
      describe(entry({ action: "tool.call", before: null, after: { ...receipt, allowed_by } }), i18n.getFixedT(lng, "settings")).details[1];
    expect(allowed({ kind: "rule", rule: { scope: "tool", server_label: "demo", tool_name: "delete_forecast", index: 1, when: 'args.city == "Oslo"', decision: "approve" } }))
      .toBe('Allowed by rule 2 of the rules of delete_forecast on demo: args.city == "Oslo"');
    expect(allowed({ kind: "rule", rule: { scope: "workspace", index: 0, when: "true", decision: "approve" } }))
      .toBe("Allowed by rule 1 of the workspace rules: true");
    expect(allowed({ kind: "rule", rule: { scope: "server", server_label: "demo", index: 0, when: "true", decision: "approve" } }, "de"))
      .toBe("Erlaubt durch Regel 1 von den Regeln des Servers demo: true");
    expect(allowed({ kind: "hook", hook: { scope: "server", server_label: "demo", reason: "sandbox city" } }))
      .toBe("Allowed by the decision hook of server demo: “sandbox city”");
    expect(allowed({ kind: "hook", hook: { scope: "workspace" } })).toBe("Allowed by the workspace's decision hook");
    expect(allowed({ kind: "grant", grant_id: "grant_5b0f", expires_at: null })).toBe("Allowed by grant grant_5b0f (for 1 hour)");
    expect(allowed({ kind: "grant", grant_id: "grant_5b0f", expires_at: "2026-11-28T15:00:00Z" })).toMatch(/^Allowed by grant grant_5b0f \(for 1 hour, until .+\)$/);
    expect(allowed({ kind: "conversation", grant_id: "grant_c1" })).toBe("Allowed by grant grant_c1 (for the conversation)");
    expect(allowed({ kind: "conversation", grant_id: "grant_c1" }, "de")).toBe("Erlaubt durch die Freigabe grant_c1 (für die Unterhaltung)");
    expect(allowed({ kind: "policy", policy: "never", source: "server" })).toMatch(/^Allowed by the policy Auto/);
    expect(describe(entry({ action: "tool.call", before: null, after: { ...receipt, allowed_by: { kind: "approval" }, decided_by: "ana@example.com" } }),
      i18n.getFixedT("en", "settings")).details[1]).toBe("Approved by ana@example.com");
  });

  it("approval.decide for requests nobody decided: expired and superseded", () => {
    const closed = (after: Record<string, unknown>, lng = "en") => text({ action: "approval.decide", before: { state: "pending" }, after }, lng);
    expect(closed({ state: "expired", by: "expiry", reason: "Nobody decided in time.", conversation_id: "c" }))
      .toBe("demo/delete_forecast: the approval request expired, nobody decided in time | Reason: “Nobody decided in time.”");
    expect(closed({ state: "superseded", by: "message", reason: "moved on" }))
      .toBe("demo/delete_forecast: the approval request was superseded by a new message | Reason: “moved on”");
    expect(closed({ state: "superseded", by: "turn_end", reason: null }))
      .toBe("demo/delete_forecast: the approval request was closed, the response that asked did not complete");
    expect(closed({ state: "expired", by: "provider_lost", reason: null }, "de"))
      .toBe("demo/delete_forecast: Die Genehmigungsanfrage ist abgelaufen, der Modellanbieter hat die Antwort verloren");
  });

  it("servers", () => {
    expect(text({ action: "server.create", tool_name: null, after: { label: "demo", url: "http://x/mcp", headers: {}, enabled: true, default_policy: null, description: "" } }))
      .toBe("Added server demo | http://x/mcp");
    const srv = { label: "demo", url: "http://x/mcp", headers: { A: "********" }, enabled: true, default_policy: null, default_policy_locked: false, description: "" };
    expect(text({ action: "server.update", tool_name: null, before: srv, after: { ...srv, enabled: false } })).toBe("Disabled server demo");
    expect(text({ action: "server.update", tool_name: null, before: srv, after: { ...srv, default_policy: "always" } }))
      .toBe("Set the default of demo to Ask (was the global default)");
    expect(text({ action: "server.update", tool_name: null, before: srv, after: { ...srv, url: "http://y/mcp", headers: { B: "********" } } }))
      .toBe("Changed server demo: URL, headers | URL: http://x/mcp → http://y/mcp | Headers: added B; removed A");
    expect(text({ action: "server.update", tool_name: null, before: srv, after: { ...srv, default_policy_locked: true } }))
      .toBe("Changed server demo: default locked");
    const timed = { ...srv, approval_ttl_seconds: null };
    expect(text({ action: "server.update", tool_name: null, before: timed, after: { ...timed, approval_ttl_seconds: 300 } }))
      .toBe("Changed server demo: approval time limit | Approval time limit: workspace default (APPROVAL_TTL) → 5 minutes");
    expect(text({ action: "server.update", tool_name: null, before: { ...timed, approval_ttl_seconds: 300 }, after: { ...timed, approval_ttl_seconds: 0 } }))
      .toBe("Changed server demo: approval time limit | Approval time limit: 5 minutes → never expires");
    expect(text({ action: "server.update", tool_name: null, before: { ...srv, mask_results: true }, after: { ...srv, mask_results: false } }))
      .toBe("Changed server demo: results pass untouched");
    expect(text({ action: "server.update", tool_name: null, before: { ...srv, mask_results: false }, after: { ...srv, mask_results: true } }))
      .toBe("Changed server demo: secrets in results masked");
    expect(text({ action: "server.update", tool_name: null, before: srv, after: timed }), "an old entry without the field is no change")
      .toBe("Changed server demo");
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
    expect(text({ action: "settings.update", server_label: null, tool_name: null,
      before: { default_policy: "never", default_policy_locked: false }, after: { default_policy: "always", default_policy_locked: false } }))
      .toBe("Changed the global default from Auto to Ask");
    expect(text({ action: "settings.update", server_label: null, tool_name: null,
      before: { default_policy: "never", default_policy_locked: false }, after: { default_policy: "never", default_policy_locked: true } }))
      .toBe("Locked the global default");
    expect(text({ action: "settings.update", server_label: null, tool_name: null,
      before: { default_policy: "never", local_user: "local" }, after: { default_policy: "never", local_user: "ann" } }))
      .toBe("Renamed the local user from local to ann");
  });

  it("approval.decide of a stop says so", () => {
    expect(text({ action: "approval.decide", after: { scope: "once", state: "denied", reason: "wrong plan", stopped: true, covered_by: "mcpr_1" } }))
      .toBe("Denied a call of demo/delete_forecast (stopped: the rest of the response was denied too, and the model got no turn) | Reason: “wrong plan”");
  });

  it("in German", () => {
    expect(text({ before: { policy: "never" }, after: { policy: "always" } }, "de"))
      .toBe("demo/delete_forecast auf Nachfragen gesetzt (vorher Automatisch)");
    expect(text({ action: "approval.decide", after: { scope: "once", state: "denied", reason: "nein", remember: true } }, "de"))
      .toBe("Einen Aufruf von demo/delete_forecast abgelehnt und das Tool ab jetzt blockiert | Grund: „nein“");
    expect(text({ action: "server.tools_changed", tool_name: null, before: { error: null, tools: {} }, after: { error: null, tools: { a: "1" } } }, "de"))
      .toBe("1 Tool auf demo erkannt | a");
    expect(text({ action: "settings.update", server_label: null, tool_name: null,
      before: { default_policy: "ask_unless_read_only" }, after: { default_policy: "blocked" } }, "de"))
      .toBe("Globalen Standard von Nachfragen außer bei nur lesenden Tools auf Blockiert geändert");
  });
});

suite("webhook audit entries", () => {
  it("say which webhook changed, with its events and whether it is on, in English and German", () => {
    const after = { id: "wh_1", url: "https://hooks.example.com/x", events: ["approval.required"], enabled: false, description: "" };
    expect(text({ action: "webhook.update", server_label: null, tool_name: null, before: { ...after, enabled: true }, after }))
      .toBe("Changed the webhook https://hooks.example.com/x | approval.required · disabled");
    expect(text({ action: "webhook.delete", server_label: null, tool_name: null, before: after, after: null }, "de"))
      .toBe("Webhook https://hooks.example.com/x gelöscht");
  });
});

suite("receipts of calls through Toolgate's MCP face", () => {
  const DIGEST = "3f9a1c0b7e2d5a4c6b8e0f1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d5e4f3";
  const receipt = {
    conversation_id: "conv_1", response_id: "resp_1", call_id: "call_1", approval_request_id: "mcpr_1",
    server_label: "demo", tool_name: "delete_forecast", arguments: { city: "Oslo", token: "[redacted]" },
    arguments_text: '{"city":"Oslo","token":"[redacted]"}', redacted: ["token"], arguments_sha256: "aa11",
    allowed_by: { kind: "approval" }, decided_by: "ana@example.com", decided_by_id: null,
    outcome: "output", output_sha256: "bb22", error: null,
    via: "gateway", definition_digest: DIGEST, refusal: null,
  };

  it("a call that ran: the definition it was checked against and the digest of the result the server sent", () => {
    expect(text({ action: "tool.call", before: null, after: receipt })).toBe(
      'Ran demo/delete_forecast | Arguments: {"city":"Oslo","token":"[redacted]"} | Hidden: token | Approved by ana@example.com'
      + ` | Through Toolgate's MCP face, against definition ${DIGEST} | SHA-256 of the arguments: aa11; of the output: bb22`);
    // A receipt from the provider (direct mode) says nothing of the face.
    expect(text({ action: "tool.call", before: null, after: { ...receipt, via: "provider", definition_digest: null } }))
      .not.toMatch(/MCP face|result the server sent/);
  });

  it("a refused call: refused, its sentence, nothing ran, no 'allowed by'; an unknown code shows the server's sentence", () => {
    const refused = { ...receipt, allowed_by: null, decided_by: null, output_sha256: null,
      refusal: { code: "definition_changed", message: "changed since you allowed it: approve again" } };
    const d = describe(entry({ action: "tool.call", before: null, after: refused }), i18n.getFixedT("en", "settings"));
    expect(partsText(d.parts)).toBe("Refused a call of demo/delete_forecast: it did not run");
    expect(d.details[0]).toBe("Refused: changed since it was allowed: approve again");
    expect(d.details.join(" | ")).not.toMatch(/Allowed by|Approved by|of the output/);
    expect(d.tone).toBe("error");
    expect(text({ action: "tool.call", before: null, after: refused }, "de"))
      .toMatch(/^Einen Aufruf von demo\/delete_forecast abgelehnt: Er lief nicht \| Abgelehnt: seit der Freigabe geändert: erneut genehmigen/);
    expect(text({ action: "tool.call", before: null, after: { ...refused, refusal: { code: "new_code", message: "a server sentence" } } }))
      .toContain("Refused: a server sentence");
  });

  it("approval.decide: not_run and outcome_unknown each in their own words", () => {
    expect(text({ action: "approval.decide", after: { state: "not_run", scope: "once", reason: null, remember: false } }))
      .toBe("Approved a call of demo/delete_forecast; it did not run");
    expect(text({ action: "approval.decide", after: { state: "outcome_unknown", scope: "once", reason: null, remember: false } }))
      .toBe("Approved a call of demo/delete_forecast; Toolgate crashed between forwarding it and storing its result: it may have run");
  });
});
