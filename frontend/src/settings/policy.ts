// Words for policies as people see them. The API says never / always /
// blocked; the UI says Auto / Ask / Blocked.
import type { Annotations, Policy, PolicySource } from "../api/types";

export const POLICIES: readonly Policy[] = ["never", "always", "blocked"];

const LABELS: Record<Policy, string> = { never: "Auto", always: "Ask", blocked: "Blocked" };
const HINTS: Record<Policy, string> = {
  never: "Runs without asking",
  always: "Asks you before every call",
  blocked: "Never offered to the model",
};

export function policyLabel(p: Policy | null | undefined): string {
  return p ? LABELS[p] ?? p : "the default";
}

export function policyHint(p: Policy): string {
  return HINTS[p];
}

export function isPolicy(v: unknown): v is Policy {
  return v === "never" || v === "always" || v === "blocked";
}

export function sourceLabel(s: PolicySource): string {
  return s === "tool" ? "set for this tool" : s === "server" ? "server default" : "global default";
}

/** What a tool without its own policy falls back to, and from where. */
export function inheritedPolicy(serverDefault: Policy | null, globalDefault: Policy | undefined): { policy: Policy | undefined; source: PolicySource } {
  return serverDefault ? { policy: serverDefault, source: "server" } : { policy: globalDefault, source: "global" };
}

/** "(Ask, server default)" — the detail shown next to "Use default". */
export function inheritedDetail(serverDefault: Policy | null, globalDefault: Policy | undefined): string | undefined {
  const { policy, source } = inheritedPolicy(serverDefault, globalDefault);
  return policy ? `(${LABELS[policy]}, ${sourceLabel(source)})` : undefined;
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
