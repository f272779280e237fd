// Audit entries in plain words: "Set demo/delete_forecast to Ask (was Auto)".
// The shapes of `before` / `after` per action are in docs/openapi.yaml
// (AuditAction).
import type { AuditEntry } from "../api/types";
import { isPolicy, policyLabel } from "./policy";

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

export type ActionGroup = "all" | "policy" | "approval" | "servers" | "settings";

export const ACTION_GROUPS: { value: ActionGroup; label: string; actions?: string[] }[] = [
  { value: "all", label: "All actions" },
  { value: "policy", label: "Policy changes", actions: ["policy.set", "policy.delete"] },
  { value: "approval", label: "Approval decisions", actions: ["approval.decide"] },
  { value: "servers", label: "Servers", actions: ["server.create", "server.update", "server.delete", "server.tools_changed"] },
  { value: "settings", label: "Settings", actions: ["settings.update"] },
];

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | null => (v && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : null);
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const pol = (v: unknown) => (isPolicy(v) ? policyLabel(v) : String(v));
const list = (xs: string[], max = 6) => (xs.length > max ? `${xs.slice(0, max).join(", ")} and ${xs.length - max} more` : xs.join(", "));

export function describe(e: AuditEntry): Described {
  const server = e.server_id ?? "";
  const ref: Part = { server, tool: e.tool_name ?? undefined };
  const before = obj(e.before);
  const after = obj(e.after);

  switch (e.action) {
    case "policy.set": {
      const was = before && isPolicy(before.policy) ? `was ${pol(before.policy)}` : "had no policy of its own";
      return { parts: ["Set ", ref, ` to ${pol(after?.policy)} (${was})`], details: [] };
    }
    case "policy.delete":
      return {
        parts: ["Removed the policy of ", ref, before?.policy ? ` (was ${pol(before.policy)}); it uses the default again` : "; it uses the default again"],
        details: [],
      };
    case "approval.decide": {
      const state = str(after?.state);
      const remember = after?.remember === true;
      const scope = str(after?.scope);
      const reason = str(after?.reason);
      const parts: Part[] =
        state === "approved"
          ? scope === "conversation"
            ? ["Allowed ", ref, " for the rest of a conversation"]
            : ["Approved a call of ", ref]
          : state === "denied"
            ? ["Denied a call of ", ref]
            : [`Decided (${state ?? "?"}) on a call of `, ref];
      if (remember) parts.push(state === "denied" ? " and blocked the tool from now on" : " and let it run without asking from now on");
      const details: string[] = [];
      if (reason) details.push(`Reason: “${reason}”`);
      return { parts, details, conversationId: str(after?.conversation_id) ?? undefined };
    }
    case "server.create": {
      const extras: string[] = [];
      const headers = obj(after?.headers);
      if (headers && Object.keys(headers).length) extras.push(`headers ${Object.keys(headers).join(", ")}`);
      if (isPolicy(after?.default_policy)) extras.push(`default ${pol(after!.default_policy)}`);
      if (after?.enabled === false) extras.push("disabled");
      const details = [str(after?.url) ?? ""].filter(Boolean);
      if (extras.length) details.push(`With ${extras.join(", ")}`);
      return { parts: ["Added server ", { server }], details };
    }
    case "server.update":
      return describeServerUpdate(server, before, after);
    case "server.delete": {
      const policies = obj(before?.policies) ?? {};
      const names = Object.keys(policies).sort();
      return {
        parts: ["Deleted server ", { server }, names.length ? ` and its ${plural(names.length, "tool policy", "tool policies")}` : ""],
        details: names.length ? [list(names.map((n) => `${n}: ${pol(policies[n])}`))] : [],
      };
    }
    case "server.tools_changed":
      return describeToolsChanged(server, before, after);
    case "settings.update": {
      const changes: string[] = [];
      if (before?.default_policy !== after?.default_policy) {
        changes.push(`changed the global default from ${pol(before?.default_policy)} to ${pol(after?.default_policy)}`);
      }
      if (before?.local_user !== after?.local_user) {
        changes.push(`renamed the local user from ${str(before?.local_user) ?? "?"} to ${str(after?.local_user) ?? "?"}`);
      }
      const text = changes.length ? changes.join(" and ") : "changed the settings";
      return { parts: [text[0].toUpperCase() + text.slice(1)], details: [] };
    }
    default:
      return { parts: [`${e.action}`, e.server_id ? " on " : "", ...(e.server_id ? [ref] : [])], details: [] };
  }
}

function describeServerUpdate(server: string, before: Obj | null, after: Obj | null): Described {
  const changes: string[] = [];
  const details: string[] = [];
  if (before?.url !== after?.url) {
    changes.push("URL");
    details.push(`URL: ${str(before?.url) ?? "?"} → ${str(after?.url) ?? "?"}`);
  }
  if (before?.description !== after?.description) {
    changes.push("description");
    details.push(`Description: “${str(after?.description) ?? ""}”`);
  }
  const hb = obj(before?.headers) ?? {};
  const ha = obj(after?.headers) ?? {};
  const added = Object.keys(ha).filter((k) => !(k in hb));
  const removed = Object.keys(hb).filter((k) => !(k in ha));
  const changed = Object.keys(ha).filter((k) => k in hb && ha[k] !== hb[k]);
  if (added.length || removed.length || changed.length) {
    changes.push("headers");
    const h: string[] = [];
    if (added.length) h.push(`added ${added.join(", ")}`);
    if (changed.length) h.push(`changed ${changed.join(", ")}`);
    if (removed.length) h.push(`removed ${removed.join(", ")}`);
    details.push(`Headers: ${h.join("; ")}`);
  }
  if (before?.default_policy !== after?.default_policy) {
    const from = isPolicy(before?.default_policy) ? pol(before!.default_policy) : "the global default";
    const to = isPolicy(after?.default_policy) ? pol(after!.default_policy) : "the global default";
    changes.push("default");
    details.push(`Server default: ${from} → ${to}`);
  }
  const toggled = before?.enabled !== after?.enabled;
  const enabledWord = after?.enabled === false ? "Disabled" : "Enabled";
  // The common single changes read best as one sentence.
  if (changes.length === 0 && toggled) return { parts: [`${enabledWord} server `, { server }], details: [] };
  if (changes.length === 1 && changes[0] === "default" && !toggled) {
    const to = isPolicy(after?.default_policy) ? pol(after!.default_policy) : "the global default";
    const from = isPolicy(before?.default_policy) ? pol(before!.default_policy) : "the global default";
    return { parts: ["Set the default of ", { server }, ` to ${to} (was ${from})`], details: [] };
  }
  if (toggled) details.push(enabledWord);
  return { parts: ["Changed server ", { server }, changes.length ? `: ${changes.join(", ")}${toggled ? `, ${enabledWord.toLowerCase()}` : ""}` : ""], details };
}

function describeToolsChanged(server: string, before: Obj | null, after: Obj | null): Described {
  const err = str(after?.error);
  if (err) return { parts: ["Tool discovery failed for ", { server }], details: [err], tone: "error" };
  const tb = obj(before?.tools) ?? {};
  const ta = obj(after?.tools) ?? {};
  const added = Object.keys(ta).filter((k) => !(k in tb)).sort();
  const removed = Object.keys(tb).filter((k) => !(k in ta)).sort();
  const changed = Object.keys(ta).filter((k) => k in tb && ta[k] !== tb[k]).sort();
  const details: string[] = [];
  if (added.length) details.push(`New: ${list(added)}`);
  if (changed.length) details.push(`Definition changed: ${list(changed)}`);
  if (removed.length) details.push(`No longer listed: ${list(removed)}`);
  const recovered = str(before?.error) !== null;
  if (!added.length && !removed.length && !changed.length) {
    return { parts: [recovered ? "Tool discovery works again for " : "Tools of ", { server }, recovered ? "" : " were discovered again"], details, tone: recovered ? "good" : undefined };
  }
  const bits: string[] = [];
  if (added.length) bits.push(`${added.length} new`);
  if (changed.length) bits.push(`${changed.length} changed`);
  if (removed.length) bits.push(`${removed.length} removed`);
  const first = Object.keys(tb).length === 0 && !removed.length && !changed.length;
  return {
    parts: first ? [`Discovered ${plural(added.length, "tool")} on `, { server }] : ["Tools of ", { server }, ` changed: ${bits.join(", ")}`],
    details: first ? [list(added)] : details,
    tone: recovered ? "good" : undefined,
  };
}

/** The sentence as plain text (for tests and titles). */
export function partsText(parts: Part[]): string {
  return parts.map((p) => (typeof p === "string" ? p : p.tool ? `${p.server}/${p.tool}` : p.server)).join("");
}
