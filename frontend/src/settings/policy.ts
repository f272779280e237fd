// Words for policies as people see them. The API says never / always /
// blocked; the UI says Auto / Ask / Blocked.
import type { Annotations, AsksBecause, DefaultPolicy, Policy, PolicySource, Tool } from "../api/types";

export const POLICIES: readonly Policy[] = ["never", "always", "blocked"];
/** What a default (global or server) can be: the policies, and "ask unless read-only" (the fresh-install default). */
export const DEFAULT_POLICIES: readonly DefaultPolicy[] = ["ask_unless_read_only", "never", "always", "blocked"];

const LABELS: Record<DefaultPolicy, string> = {
  never: "Auto", always: "Ask", blocked: "Blocked", ask_unless_read_only: "Ask unless read-only",
};
const HINTS: Record<DefaultPolicy, string> = {
  never: "Runs without asking",
  always: "Asks you before every call",
  blocked: "Never offered to the model",
  ask_unless_read_only: "Runs tools the server declares read-only; asks before every other one",
};

export function policyLabel(p: DefaultPolicy | null | undefined): string {
  return p ? LABELS[p] ?? p : "the default";
}

export function policyHint(p: DefaultPolicy): string {
  return HINTS[p];
}

const STRICTNESS: Record<Policy, number> = { never: 0, always: 1, blocked: 2 };

/** True when a is looser than b (Auto < Ask < Blocked). */
export function looser(a: Policy, b: Policy): boolean {
  return STRICTNESS[a] < STRICTNESS[b];
}

/** A default applied to one tool: ask_unless_read_only runs read-only tools and asks for the rest. */
export function resolveDefault(p: DefaultPolicy, a: Annotations | null | undefined): Policy {
  if (p === "ask_unless_read_only") return a?.readOnlyHint === true ? "never" : "always";
  return p;
}

/** What the workspace (admins) decided for a tool, before anyone's personal policy. */
export function workspacePolicy(t: Tool, serverDefault: DefaultPolicy | null, globalDefault: DefaultPolicy | undefined): Policy | undefined {
  if (t.policy) return t.policy;
  const d = serverDefault ?? globalDefault;
  return d ? resolveDefault(d, t.annotations) : undefined;
}

const FIELD_WORDS: Record<string, string> = {
  description: "description", input_schema: "input schema", annotations: "hints", title: "title",
};

/** "description, input schema": what changed in a tool's definition. */
export function changedFieldsText(fields: readonly string[] | null | undefined): string {
  return (fields ?? []).map((f) => FIELD_WORDS[f] ?? f.replace(/_/g, " ")).join(", ");
}

/**
 * Why a tool asks, as a short phrase (lower case; callers capitalise):
 * "asks because it is not read-only", "new: asks until someone sets its
 * policy", "changed since you allowed it: description, input schema".
 * Undefined when the reason is plainly a policy (the source says which).
 */
export function asksBecausePhrase(ab: AsksBecause | null | undefined, changedFields?: readonly string[] | null): string | undefined {
  switch (ab?.reason) {
    case "not_read_only":
      return "asks because it is not read-only";
    case "new_tool":
      return "new: asks until someone sets its policy";
    case "changed": {
      const fields = changedFieldsText(changedFields ?? (Array.isArray(ab.fields) ? ab.fields : undefined));
      return `changed since you allowed it${fields ? `: ${fields}` : ""}`;
    }
    case "read_only_changed":
      return "says it is read-only, but changed after it was first seen: asks until someone sets its policy";
    default:
      return undefined;
  }
}

export function isDefaultPolicy(v: unknown): v is DefaultPolicy {
  return isPolicy(v) || v === "ask_unless_read_only";
}

export function isPolicy(v: unknown): v is Policy {
  return v === "never" || v === "always" || v === "blocked";
}

const SOURCES: Record<PolicySource, string> = {
  tool: "set for this tool",
  server: "server default",
  global: "global default",
  user: "your policy",
  locked: "locked by an admin",
  new: "new tool",
  changed: "changed tool",
};

export function sourceLabel(s: PolicySource | string): string {
  return SOURCES[s as PolicySource] ?? s;
}

/** What a tool without its own policy falls back to, and from where. */
export function inheritedPolicy(serverDefault: DefaultPolicy | null, globalDefault: DefaultPolicy | undefined): { policy: DefaultPolicy | undefined; source: PolicySource } {
  return serverDefault ? { policy: serverDefault, source: "server" } : { policy: globalDefault, source: "global" };
}

/** "(Ask, server default)" — the detail shown next to "Use default"; a per-tool default shows what it is for this tool. */
export function inheritedDetail(serverDefault: DefaultPolicy | null, globalDefault: DefaultPolicy | undefined, a?: Annotations | null): string | undefined {
  const { policy, source } = inheritedPolicy(serverDefault, globalDefault);
  if (!policy) return undefined;
  const shown = policy === "ask_unless_read_only" && a !== undefined ? resolveDefault(policy, a) : policy;
  return `(${LABELS[shown]}, ${sourceLabel(source)})`;
}

/** True when the server declared no hints at all (MCP then assumes the worst). */
export function hasNoHints(a: Annotations | null | undefined): boolean {
  return !a || (a.readOnlyHint == null && a.destructiveHint == null && a.openWorldHint == null && a.idempotentHint == null);
}

export function isDestructive(a: Annotations | null | undefined): boolean {
  return a?.destructiveHint === true;
}

/** The message of an error, for "Could not save: …". */
export function errorMessage(err: unknown): string {
  if (err instanceof Error && err.message) return err.message;
  if (typeof err === "string" && err) return err;
  return "something went wrong";
}
