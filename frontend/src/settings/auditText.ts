// Audit entries in plain words: "Set demo/delete_forecast to Ask (was Auto)",
// "demo/delete_forecast auf Nachfragen gesetzt (vorher Automatisch)". The
// shapes of `before` / `after` per action are in docs/openapi.yaml
// (AuditAction). Sentences with a link to a server or tool are
// translations with <ref/> where the link goes (see toParts).
import { isKnownRefusal } from "../api/refusals";
import type { AuditEntry } from "../api/types";
import { isDefaultPolicy, isPolicy, policyLabel, sourceLabel, type SettingsT } from "./policy";

/** A piece of a sentence: text, or a reference the page can link. */
export type Part = string | { server: string; tool?: string };

export interface Described {
  parts: Part[];
  /** Secondary lines: a reason, the URL, the tools that changed. */
  details: string[];
  /** The conversation an approval decision was made in. */
  conversationId?: string;
  /** "error" for failures, "good" for things getting safer or working again. */
  tone?: "error" | "good";
}

export type ActionGroup = "all" | "policy" | "approval" | "calls" | "servers" | "settings";

export const ACTION_GROUPS: { value: ActionGroup; actions?: string[] }[] = [
  { value: "all" },
  { value: "policy", actions: ["policy.set", "policy.delete", "policy.clear"] },
  { value: "approval", actions: ["approval.decide"] },
  { value: "calls", actions: ["tool.call"] },
  { value: "servers", actions: ["server.create", "server.update", "server.delete", "server.tools_changed"] },
  { value: "settings", actions: ["settings.update", "webhook.create", "webhook.update", "webhook.delete"] },
];

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | null => (v && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : null);
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);

/** A translated sentence split at its <ref/> into text and the reference. */
function toParts(text: string, ref: Part): Part[] {
  const [head, ...rest] = text.split("<ref/>");
  if (!rest.length) return [text];
  return [head, ref, rest.join("")].filter((p) => p !== "");
}

export function describe(e: AuditEntry, t: SettingsT): Described {
  const server = e.server_label ?? "";
  const ref: Part = { server, tool: e.tool_name ?? undefined };
  const srv: Part = { server };
  const before = obj(e.before);
  const after = obj(e.after);
  const pol = (v: unknown) => (isDefaultPolicy(v) ? policyLabel(v, t) : String(v));
  const list = (xs: string[], max = 6) =>
    xs.length > max ? t("audit.listMore", { list: xs.slice(0, max).join(", "), count: xs.length - max }) : xs.join(", ");
  const say = (key: string, at: Part, vars: Record<string, unknown> = {}) => toParts(t(key, vars), at);

  switch (e.action) {
    case "policy.set": {
      const personal = after?.layer === "user" ? "Personal" : "";
      const to = pol(after?.policy);
      return {
        parts: isPolicy(before?.policy)
          ? say(`audit.policySet${personal}`, ref, { policy: to, was: pol(before!.policy) })
          : say(`audit.policySetNew${personal}`, ref, { policy: to }),
        details: after?.locked === true ? [t("audit.lockedDetail")] : [],
      };
    }
    case "policy.delete":
      return {
        parts: isPolicy(before?.policy)
          ? say("audit.policyDeleted", ref, { was: pol(before!.policy) })
          : say("audit.policyDeletedNone", ref),
        details: [],
      };
    case "policy.clear": {
      const policies = obj(before?.policies) ?? {};
      const names = Object.keys(policies).sort();
      const key = before?.layer === "user" ? "audit.policiesClearedPersonal" : "audit.policiesCleared";
      return {
        parts: say(key, srv, { count: names.length }),
        details: names.length ? [list(names.map((n) => `${n}: ${pol(policies[n])}`))] : [],
      };
    }
    case "approval.decide":
      return describeDecision(ref, after, t);
    case "tool.call":
      return describeCall(ref, after, t, pol);
    case "server.create": {
      const extras: string[] = [];
      const headers = obj(after?.headers);
      if (headers && Object.keys(headers).length) extras.push(t("audit.withHeaders", { names: Object.keys(headers).join(", ") }));
      if (isDefaultPolicy(after?.default_policy)) extras.push(t("audit.withDefault", { policy: pol(after!.default_policy) }));
      if (after?.enabled === false) extras.push(t("audit.withDisabled"));
      const details = [str(after?.url) ?? ""].filter(Boolean);
      if (extras.length) details.push(t("audit.with", { extras: extras.join(", ") }));
      return { parts: say("audit.serverCreated", srv), details };
    }
    case "server.update":
      return describeServerUpdate(srv, before, after, t, pol);
    case "server.delete": {
      const policies = obj(before?.policies) ?? {};
      const names = Object.keys(policies).sort();
      return {
        parts: names.length ? say("audit.serverDeletedPolicies", srv, { count: names.length }) : say("audit.serverDeleted", srv),
        details: names.length ? [list(names.map((n) => `${n}: ${pol(policies[n])}`))] : [],
      };
    }
    case "server.tools_changed":
      return describeToolsChanged(srv, before, after, t, list);
    case "settings.update": {
      const changes: string[] = [];
      if (before?.default_policy !== after?.default_policy) {
        changes.push(t("audit.globalDefault", { from: pol(before?.default_policy), to: pol(after?.default_policy) }));
      }
      if (after && "default_policy_locked" in after && before?.default_policy_locked !== after.default_policy_locked) {
        changes.push(t(after.default_policy_locked ? "audit.globalLocked" : "audit.globalUnlocked"));
      }
      if (before?.local_user !== after?.local_user) {
        changes.push(t("audit.localUser", { from: str(before?.local_user) ?? "?", to: str(after?.local_user) ?? "?" }));
      }
      const text = changes.length ? changes.join(t("audit.and")) : t("audit.settingsChanged");
      return { parts: [text[0].toUpperCase() + text.slice(1)], details: [] };
    }
    case "webhook.create":
    case "webhook.update":
    case "webhook.delete": {
      const w = after ?? before;
      const key = e.action === "webhook.create" ? "audit.webhookCreated" : e.action === "webhook.delete" ? "audit.webhookDeleted" : "audit.webhookUpdated";
      const events = Array.isArray(w?.events) ? (w.events as unknown[]).map(String).join(", ") : "";
      const enabled = after ? t(after.enabled === false ? "audit.webhookOff" : "audit.webhookOn") : "";
      return { parts: [t(key, { url: str(w?.url) ?? "?" })], details: after ? [`${events} · ${enabled}`] : [] };
    }
    default:
      return { parts: e.server_label ? say("audit.otherOn", ref, { action: e.action }) : [e.action], details: [] };
  }
}

function describeDecision(ref: Part, after: Obj | null, t: SettingsT): Described {
  const state = str(after?.state);
  const remember = after?.remember === true;
  const reason = str(after?.reason);
  const by = str(after?.by);
  const key =
    state === "approved" ? (after?.scope === "conversation" ? "audit.allowedConversation"
      : after?.scope === "server" ? "audit.approvedServer" : after?.scope === "everything" ? "audit.approvedEverything" : "audit.approved")
    : state === "denied" ? "audit.denied"
    : state === "expired" ? (by === "provider_lost" ? "audit.expiredLost" : "audit.expired")
    : state === "superseded" ? (by === "message" ? "audit.superseded" : "audit.supersededTurnEnd")
    : state === "not_run" ? "audit.notRun"
    : state === "outcome_unknown" ? "audit.outcomeUnknown"
    : "audit.decided";
  const parts = toParts(t(key, { state: state ?? "?" }), ref);
  if (remember) parts.push(t(state === "denied" ? "audit.rememberBlocked" : "audit.rememberAllowed"));
  // A person's stop: this request, or another of its response, denied them all and the model got no turn.
  if (after?.stopped === true) parts.push(t("audit.stopped"));
  return {
    parts,
    details: reason ? [t("audit.reason", { reason })] : [],
    conversationId: str(after?.conversation_id) ?? undefined,
  };
}

/**
 * A receipt (docs/openapi.yaml ToolCallReceipt): what ran, with which
 * arguments, allowed by what, how it ended; through Toolgate's MCP face
 * (via "gateway") also the definition it was checked against and the
 * result's digest, or why the face refused it (then nothing ran).
 */
function describeCall(ref: Part, after: Obj | null, t: SettingsT, pol: (v: unknown) => string): Described {
  const refusal = obj(after?.refusal);
  const failed = !refusal && after?.outcome === "error";
  const details: string[] = [];
  if (refusal) details.push(t("audit.callRefusal", { sentence: refusalSentence(refusal, t) }));
  details.push(t("audit.callArguments", { args: str(after?.arguments_text) ?? JSON.stringify(after?.arguments ?? {}) }));
  const hidden = Array.isArray(after?.redacted) ? (after.redacted as unknown[]).filter((p) => typeof p === "string") : [];
  if (hidden.length) details.push(t("audit.callRedacted", { paths: hidden.join(", ") }));
  if (!refusal) details.push(allowedByText(obj(after?.allowed_by), after, t, pol));
  if (after?.via === "gateway") details.push(t("audit.callViaGateway", { digest: str(after.definition_digest) ?? "?" }));
  if (failed) {
    const err = obj(after?.error);
    details.push(t("audit.callError", { message: str(err?.message) ?? JSON.stringify(after?.error) }));
  }
  if (!refusal) {
    details.push(t("audit.callDigests", { args: str(after?.arguments_sha256) ?? "?", output: str(after?.output_sha256) ?? t("audit.callNoOutput") }));
  } else {
    details.push(t("audit.callArgumentsDigest", { args: str(after?.arguments_sha256) ?? "?" }));
  }
  return {
    parts: toParts(t(refusal ? "audit.toolCallRefused" : failed ? "audit.toolCallFailed" : "audit.toolCall"), ref),
    details,
    conversationId: str(after?.conversation_id) ?? undefined,
    tone: refusal || failed ? "error" : undefined,
  };
}

/** Why the face refused a call, in the page's language for a known code, else the server's sentence. */
function refusalSentence(r: Obj, t: SettingsT): string {
  const code = r.code;
  return isKnownRefusal(code) ? t(`audit.refusal.${code}`) : str(r.message) ?? String(code);
}

/** "Allowed by …": the person who approved, the rule (which one), the hook, the grant (its id) or the policy. */
export function allowedByText(by: Obj | null, after: Obj | null, t: SettingsT, pol: (v: unknown) => string): string {
  const grant = str(by?.grant_id);
  switch (by?.kind) {
    case "approval":
      return t("audit.callAllowedApproval", { who: str(after?.decided_by) ?? str(after?.decided_by_id) ?? "?" });
    case "conversation":
      return grant ? t("audit.callAllowedConversationGrant", { id: grant }) : t("audit.callAllowedConversation");
    case "grant": {
      const until = str(by.expires_at);
      return until ? t("audit.callAllowedGrantUntil", { id: grant ?? "?", until: new Date(until).toLocaleString() })
        : t("audit.callAllowedGrant", { id: grant ?? "?" });
    }
    case "policy":
      return t("audit.callAllowedPolicy", { policy: pol(by.policy), source: sourceLabel(str(by.source) ?? "?", t) });
    case "rule": {
      const r = obj(by.rule);
      const scope = str(r?.scope);
      const list = scope === "tool" ? t("audit.rulesOfTool", { tool: str(r?.tool_name) ?? "?", server: str(r?.server_label) ?? "?" })
        : scope === "server" ? t("audit.rulesOfServer", { server: str(r?.server_label) ?? "?" })
        : t("audit.rulesOfWorkspace");
      const n = typeof r?.index === "number" ? r.index + 1 : "?";
      return t("audit.callAllowedRule", { n, list, when: str(r?.when) ?? "?" });
    }
    case "hook": {
      const h = obj(by.hook);
      const which = str(h?.scope) === "server" ? t("audit.hookOfServer", { server: str(h?.server_label) ?? "?" }) : t("audit.hookOfWorkspace");
      const reason = str(h?.reason);
      return reason ? t("audit.callAllowedHookReason", { which, reason }) : t("audit.callAllowedHook", { which });
    }
    default:
      return t("audit.callAllowedUnknown");
  }
}

function describeServerUpdate(srv: Part, before: Obj | null, after: Obj | null, t: SettingsT, pol: (v: unknown) => string): Described {
  const changes: string[] = [];
  const details: string[] = [];
  const defaultOf = (v: unknown) => (isDefaultPolicy(v) ? pol(v) : t("policy.globalDefault"));
  if (before?.url !== after?.url) {
    changes.push(t("audit.change.url"));
    details.push(t("audit.urlDetail", { from: str(before?.url) ?? "?", to: str(after?.url) ?? "?" }));
  }
  if (before?.description !== after?.description) {
    changes.push(t("audit.change.description"));
    details.push(t("audit.descriptionDetail", { text: str(after?.description) ?? "" }));
  }
  const hb = obj(before?.headers) ?? {};
  const ha = obj(after?.headers) ?? {};
  const added = Object.keys(ha).filter((k) => !(k in hb));
  const removed = Object.keys(hb).filter((k) => !(k in ha));
  const changed = Object.keys(ha).filter((k) => k in hb && ha[k] !== hb[k]);
  if (added.length || removed.length || changed.length) {
    changes.push(t("audit.change.headers"));
    const h: string[] = [];
    if (added.length) h.push(t("audit.headersAdded", { names: added.join(", ") }));
    if (changed.length) h.push(t("audit.headersChanged", { names: changed.join(", ") }));
    if (removed.length) h.push(t("audit.headersRemoved", { names: removed.join(", ") }));
    details.push(t("audit.headersDetail", { changes: h.join("; ") }));
  }
  if (before?.default_policy !== after?.default_policy) {
    changes.push(t("audit.change.default"));
    details.push(t("audit.defaultDetail", { from: defaultOf(before?.default_policy), to: defaultOf(after?.default_policy) }));
  }
  if (after && "default_policy_locked" in after && before?.default_policy_locked !== after.default_policy_locked) {
    changes.push(t(after.default_policy_locked ? "audit.change.locked" : "audit.change.unlocked"));
  }
  if (after && "approval_ttl_seconds" in after && (before?.approval_ttl_seconds ?? null) !== (after.approval_ttl_seconds ?? null)) {
    const ttlOf = (v: unknown) =>
      typeof v !== "number" ? t("audit.ttlWorkspace") : v === 0 ? t("audit.ttlNever") : t("audit.ttlMinutes", { count: Math.round((v / 60) * 100) / 100 });
    changes.push(t("audit.change.approvalTtl"));
    details.push(t("audit.ttlDetail", { from: ttlOf(before?.approval_ttl_seconds), to: ttlOf(after.approval_ttl_seconds) }));
  }
  // Named in an entry only when it is off or changed: absent means on.
  if ((before?.mask_results !== false) !== (after?.mask_results !== false)) {
    changes.push(t(after?.mask_results === false ? "audit.change.unmasked" : "audit.change.masked"));
  }
  const toggled = before?.enabled !== after?.enabled;
  const off = after?.enabled === false;
  // The common single changes read best as one sentence.
  if (changes.length === 0 && toggled) return { parts: toParts(t(off ? "audit.serverDisabled" : "audit.serverEnabled"), srv), details: [] };
  if (changes.length === 1 && before?.default_policy !== after?.default_policy && !toggled) {
    return {
      parts: toParts(t("audit.serverDefault", { to: defaultOf(after?.default_policy), from: defaultOf(before?.default_policy) }), srv),
      details: [],
    };
  }
  if (toggled) {
    details.push(t(off ? "audit.disabled" : "audit.enabled"));
    changes.push(t(off ? "audit.change.disabled" : "audit.change.enabled"));
  }
  return {
    parts: changes.length ? toParts(t("audit.serverChanged", { changes: changes.join(", ") }), srv) : toParts(t("audit.serverChangedNothing"), srv),
    details,
  };
}

function describeToolsChanged(srv: Part, before: Obj | null, after: Obj | null, t: SettingsT, list: (xs: string[]) => string): Described {
  const err = str(after?.error);
  if (err) return { parts: toParts(t("audit.discoveryFailed"), srv), details: [err], tone: "error" };
  const tb = obj(before?.tools) ?? {};
  const ta = obj(after?.tools) ?? {};
  const added = Object.keys(ta).filter((k) => !(k in tb)).sort();
  const removed = Object.keys(tb).filter((k) => !(k in ta)).sort();
  const changed = Object.keys(ta).filter((k) => k in tb && ta[k] !== tb[k]).sort();
  const recovered = str(before?.error) !== null;
  const tone = recovered ? ("good" as const) : undefined;
  if (!added.length && !removed.length && !changed.length) {
    return { parts: toParts(t(recovered ? "audit.discoveryWorks" : "audit.rediscovered"), srv), details: [], tone };
  }
  if (Object.keys(tb).length === 0 && !removed.length && !changed.length) {
    return { parts: toParts(t("audit.discovered", { count: added.length }), srv), details: [list(added)], tone };
  }
  const bits: string[] = [];
  const details: string[] = [];
  if (added.length) {
    bits.push(t("audit.countNew", { count: added.length }));
    details.push(t("audit.newDetail", { names: list(added) }));
  }
  if (changed.length) {
    bits.push(t("audit.countChanged", { count: changed.length }));
    details.push(t("audit.changedDetail", { names: list(changed) }));
  }
  if (removed.length) {
    bits.push(t("audit.countRemoved", { count: removed.length }));
    details.push(t("audit.removedDetail", { names: list(removed) }));
  }
  return { parts: toParts(t("audit.toolsChanged", { changes: bits.join(", ") }), srv), details, tone };
}

/** The sentence as plain text (for tests and titles). */
export function partsText(parts: Part[]): string {
  return parts.map((p) => (typeof p === "string" ? p : p.tool ? `${p.server}/${p.tool}` : p.server)).join("");
}
