// Argument rules in settings: which list an editor shows, its query, where
// an API error belongs (the rule it names, with CEL's line and column), the
// example rules the editor offers and sample arguments from a tool's input
// schema.
import { queryOptions } from "@tanstack/react-query";
import { ApiError, api, type RuleListRef } from "../api/client";
import { keys } from "../api/query";
import type { Rule } from "../api/types";

export const rulesQuery = (list: RuleListRef) =>
  queryOptions({ queryKey: keys.rules(list.server, list.tool), queryFn: () => api.rules(list) });

/** An invalid rule as the API reported it (400 with details.rule_index). */
export interface RuleError {
  /** The rule it is about (0-based); undefined: about the list as a whole. */
  index?: number;
  line?: number;
  column?: number;
  message: string;
}

/** Where err belongs in the editor, when it is an invalid-rule answer; undefined otherwise. */
export function ruleErrorOf(err: unknown): RuleError | undefined {
  if (!(err instanceof ApiError) || err.status !== 400) return undefined;
  const d = (err.details ?? {}) as { rule_index?: unknown; line?: unknown; column?: unknown; problem?: unknown };
  const num = (v: unknown) => (typeof v === "number" && v > 0 ? v : undefined);
  const index = typeof d.rule_index === "number" ? d.rule_index : undefined;
  return {
    index,
    line: num(d.line),
    column: num(d.column),
    // At a rule, the editor names it and the position itself: the problem alone, so the rule is named once.
    message: index !== undefined && typeof d.problem === "string" && d.problem ? d.problem : err.message,
  };
}

/** The top-level properties of a JSON schema with their types, in order; [] without any. */
export function schemaProps(schema: unknown): { name: string; type?: string; example?: unknown }[] {
  if (!schema || typeof schema !== "object") return [];
  const props = (schema as { properties?: Record<string, unknown> }).properties;
  if (!props || typeof props !== "object") return [];
  return Object.entries(props).map(([name, p]) => {
    const q = (p ?? {}) as { type?: unknown; default?: unknown; examples?: unknown };
    const example = Array.isArray(q.examples) && q.examples.length ? q.examples[0] : q.default;
    return { name, type: typeof q.type === "string" ? q.type : undefined, example };
  });
}

/** Sample arguments for a tool: each property of its input schema with an example, a default or an empty value. */
export function sampleArgs(schema: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of schemaProps(schema)) {
    if (p.example !== undefined) out[p.name] = p.example;
    else out[p.name] = { number: 0, integer: 0, boolean: false, array: [], object: {} }[p.type ?? ""] ?? "";
  }
  return out;
}

/**
 * The example rules the editor offers. For a tool with an input schema the
 * argument names are its own (a rule may only read those), the first string
 * argument standing in for city and path.
 */
export function examples(schema?: unknown): Rule[] {
  const props = schemaProps(schema);
  const has = (n: string) => !props.length || props.some((p) => p.name === n);
  const str = props.find((p) => p.type === "string")?.name;
  const city = has("city") ? "city" : str;
  const path = has("path") ? "path" : str;
  const out: Rule[] = [];
  if (city) out.push({ when: `args.${city} in ["Test", "Sandbox"]`, decision: "approve", reason: "test data only" });
  if (path) out.push({ when: `args.${path}.startsWith("/etc/")`, decision: "deny", reason: "system files" });
  out.push({ when: `user.role == "admin"`, decision: "ask" });
  return out;
}
