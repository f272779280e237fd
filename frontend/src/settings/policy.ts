// Words for policies as people see them. The API says never / always /
// blocked; the UI says Auto / Ask / Blocked (Automatisch / Nachfragen /
// Blockiert). Every word comes from the "settings" namespace: components pass
// the `t` of their useTranslation("settings") (so a language change renders
// them again); callers outside a component may leave it out and get the
// current language.
import type { TFunction } from "i18next";
import i18n from "../i18n";
import type { Annotations, AsksBecause, DefaultPolicy, Policy, PolicySource, Tool } from "../api/types";

/** The `t` of useTranslation("settings"). */
export type SettingsT = TFunction<"settings">;

/** The settings words in the current language, for callers without a hook. */
export const settingsT = (): SettingsT => i18n.getFixedT(null, "settings");

export const POLICIES: readonly Policy[] = ["never", "always", "blocked"];
/** What a default (global or server) can be: the policies, and "ask unless read-only" (the fresh-install default). */
export const DEFAULT_POLICIES: readonly DefaultPolicy[] = ["ask_unless_read_only", "never", "always", "blocked"];

/** "Auto", "Ask", "Blocked", "Ask unless read-only"; "the default" for none. */
export function policyLabel(p: DefaultPolicy | null | undefined, t: SettingsT = settingsT()): string {
  return p ? t(`policy.${p}`, { defaultValue: p }) : t("policy.theDefault");
}

/** "Runs without asking", … */
export function policyHint(p: DefaultPolicy, t: SettingsT = settingsT()): string {
  return t(`policyHint.${p}`);
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

/** "description, input schema": what changed in a tool's definition. */
export function changedFieldsText(fields: readonly string[] | null | undefined, t: SettingsT = settingsT()): string {
  return (fields ?? []).map((f) => t(`field.${f}`, { defaultValue: f.replace(/_/g, " ") })).join(", ");
}

/**
 * Why a tool asks, as a short phrase (lower case; callers capitalise):
 * "asks because it is not read-only", "new: asks until someone sets its
 * policy", "changed since you allowed it: description, input schema".
 * Undefined when the reason is plainly a policy (the source says which).
 */
export function asksBecausePhrase(
  ab: AsksBecause | null | undefined, changedFields?: readonly string[] | null, t: SettingsT = settingsT(),
): string | undefined {
  switch (ab?.reason) {
    case "not_read_only":
      return t("asks.notReadOnly");
    case "new_tool":
      return t("asks.newTool");
    case "changed": {
      const fields = changedFieldsText(changedFields ?? (Array.isArray(ab.fields) ? ab.fields : undefined), t);
      return fields ? t("asks.changedFields", { fields }) : t("asks.changed");
    }
    case "read_only_changed":
      return t("asks.readOnlyChanged");
    case "read_only_claimed":
      return t("asks.readOnlyClaimed");
    case "ask_everything":
      return t("asks.askEverything");
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

const SOURCES: readonly string[] = ["tool", "server", "global", "user", "locked", "new", "changed", "ask_everything"];

/** "set for this tool", "server default", … */
export function sourceLabel(s: PolicySource | string, t: SettingsT = settingsT()): string {
  return SOURCES.includes(s) ? t(`source.${s}`) : s;
}

/** What a tool without its own policy falls back to, and from where. */
export function inheritedPolicy(serverDefault: DefaultPolicy | null, globalDefault: DefaultPolicy | undefined): { policy: DefaultPolicy | undefined; source: PolicySource } {
  return serverDefault ? { policy: serverDefault, source: "server" } : { policy: globalDefault, source: "global" };
}

/** "(Ask, server default)" — the detail shown next to "Use default"; a per-tool default shows what it is for this tool. */
export function inheritedDetail(
  serverDefault: DefaultPolicy | null, globalDefault: DefaultPolicy | undefined, a?: Annotations | null, t: SettingsT = settingsT(),
): string | undefined {
  const { policy, source } = inheritedPolicy(serverDefault, globalDefault);
  if (!policy) return undefined;
  const shown = policy === "ask_unless_read_only" && a !== undefined ? resolveDefault(policy, a) : policy;
  return t("inheritedDetail", { policy: policyLabel(shown, t), source: sourceLabel(source, t) });
}

/** True when the server declared no hints at all (MCP then assumes the worst). */
export function hasNoHints(a: Annotations | null | undefined): boolean {
  return !a || (a.readOnlyHint == null && a.destructiveHint == null && a.openWorldHint == null && a.idempotentHint == null);
}

export function isDestructive(a: Annotations | null | undefined): boolean {
  return a?.destructiveHint === true;
}
