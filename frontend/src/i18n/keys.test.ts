// @vitest-environment node
// No raw translation keys: every key the code names, in t("…"),
// <Trans i18nKey="…">, a ternary or a variable holding "ns.key", exists in
// English and in German; every key the code builds (t(`item.allowed.source.${source}`))
// is listed in DYNAMIC below with every value it can take, taken from the
// API's types (src/api/schema.d.ts) where the value comes from the API, and
// each of those exists in both languages too. A new t(`…${x}`) fails here
// until it is listed. The locales themselves: i18n.test.ts (same keys in
// both, none empty).
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { components } from "../api/schema";
import type { FieldError } from "../chat/correctionForm";
import { REFUSAL_CODES } from "../api/refusals";
import type { Outcome } from "../chat/transcript";
import { COUNTS, PERIOD_ERRORS, PRESETS } from "../settings/approvalStats";
import { ACTION_GROUPS } from "../settings/auditText";
import { TOOL_FILTERS } from "../settings/filters";
import { resources } from "./index";
import { agentClients } from "../account/AgentSnippets";
import { LINK_REFUSALS } from "../link/LinkPage";

type S = components["schemas"];
type Tree = { [k: string]: string | Tree };
type NS = keyof typeof resources.en;
const namespaces = Object.keys(resources.en) as NS[];
const langs = ["en", "de"] as const;

/**
 * Every value of a union, as a list the compiler checks both ways: a value
 * the type does not have, or one it has that the list lacks, fails
 * `npm run typecheck` (so a new enum value in docs/openapi.yaml fails there
 * and, once listed, here until it is translated).
 */
function all<T extends string>() {
  return <const A extends readonly T[]>(...xs: A & ([T] extends [A[number]] ? unknown : ["missing", Exclude<T, A[number]>])) => xs as readonly T[];
}

type AllowedBy = S["AllowedBy"];
type Approval = S["Approval"];
const policies = all<S["Policy"]>()("never", "always", "blocked");
const defaultPolicies = all<S["DefaultPolicy"]>()("ask_unless_read_only", "never", "always", "blocked");
const policySources = all<S["PolicySource"]>()("tool", "server", "global", "user", "locked", "new", "changed", "ask_everything");
const allowedSources = all<NonNullable<AllowedBy["source"]>>()("tool", "server", "global", "user", "locked", "new", "changed", "ask_everything", "conversation", "unknown");
const asksSources = all<Approval["asks_because"]["source"]>()("tool", "server", "global", "user", "locked", "new", "changed", "ask_everything", "unknown");
const changedFields = all<NonNullable<Approval["asks_because"]["fields"]>[number]>()("title", "description", "input_schema", "annotations");
const ruleScopes = all<S["RuleRef"]["scope"]>()("tool", "server", "workspace");
const ruleDecisions = all<S["Rule"]["decision"]>()("approve", "deny", "ask");
const hookDecisions = all<S["DecisionHookAnswer"]["decision"]>()("approve", "deny", "ask");
const approvalStates = all<Approval["state"]>()("pending", "approved", "denied", "superseded", "not_run", "outcome_unknown", "expired", "withdrawn");
const grantStates = all<S["Grant"]["state"]>()("active", "expired", "revoked");
const deliveryStates = all<S["WebhookDelivery"]["state"]>()("pending", "delivered", "failed");
const roles = all<S["Me"]["role"]>()("admin", "member");
const askLocks = all<NonNullable<Approval["ask_lock"]>>()("tool", "server", "global");
const copyStates = ["copied", "failed"] as const; // TokensPage, WebhooksSection: useState<"" | "copied" | "failed">
const prefix = (p: string, xs: readonly string[], suffix = "") => xs.map((x) => `${p}${x}${suffix}`);
const cross = (...parts: (readonly string[])[]) => parts.reduce<string[]>((acc, xs) => acc.flatMap((a) => xs.map((x) => a + x)), [""]);

/**
 * Each key the code builds (its template with every ${…} as *): the keys it
 * can become. Values from the API come from its types (checked by `all`
 * above); the app's own come from the code's constants.
 */
const DYNAMIC: Record<string, { ns?: NS; keys: readonly string[] | Partial<Record<NS, readonly string[]>> }> = {
  // chat
  "item.allowed.source.*": { keys: prefix("item.allowed.source.", allowedSources) },
  // The chat names a call's policy (allowed_by.policy); settings any default, the hint-based one too.
  "policy.*": { keys: { chat: prefix("policy.", policies), settings: prefix("policy.", defaultPolicies) } },
  "rules.scope.*": { ns: "chat", keys: prefix("rules.scope.", ruleScopes) },
  "card.askLock.*": { ns: "chat", keys: prefix("card.askLock.", askLocks) },
  "approvalCard.choice.*": { ns: "settings", keys: prefix("approvalCard.choice.", all<S["ApprovalChoice"]>()("approve_once", "approve_conversation",
    "approve_hour", "remember", "deny", "deny_with_correction")) },
  "why.field.*": { keys: prefix("why.field.", changedFields) },
  "why.source.*": { keys: prefix("why.source.", asksSources.filter((s) => s !== "ask_everything")) }, // ask_everything is a reason, said before (asksBecauseText)
  "card.hint.*.title": { keys: prefix("card.hint.", ["readOnlyHint", "destructiveHint", "openWorldHint"], ".title") },
  "card.hint.*.label": { keys: prefix("card.hint.", ["readOnlyHint", "destructiveHint", "openWorldHint"], ".label") },
  "card.*": { keys: prefix("card.", ["approveOnce", "approveConversation", "approveHour", "approveAlways", "denyOnce", "denyAlways"]) },
  "card.*Hint": { keys: prefix("card.", ["approveOnce", "approveConversation", "approveHour", "approveAlways", "denyOnce", "denyAlways"], "Hint") },
  // Deciding wider from the card (chat/wider.ts: WiderScope; WiderOffer links).
  "wider.*.menu": { ns: "chat", keys: prefix("wider.", ["server", "everything"], ".menu") },
  "wider.*.hint": { ns: "chat", keys: prefix("wider.", ["server", "everything"], ".hint") },
  "wider.*.confirmLabel": { ns: "chat", keys: prefix("wider.", ["server", "everything"], ".confirmLabel") },
  "wider.*.confirm": { ns: "chat", keys: prefix("wider.", ["server", "everything"], ".confirm") },
  "wider.*.kept": { ns: "chat", keys: prefix("wider.", ["server", "everything"], ".kept") },
  "wider.*.approve": { ns: "chat", keys: prefix("wider.", ["server", "everything"], ".approve") },
  "wider.*": { ns: "chat", keys: ["wider.mySettings"] },
  "correction.error.*": { keys: prefix("correction.error.", all<FieldError>()("required", "number", "integer", "json")) },
  "decided.*ByRule*": { keys: cross(["decided."], ["approved", "denied"], ["ByRule"], ["", "Reason"]) },
  "decided.*ByHook*": { keys: cross(["decided."], ["approved", "denied"], ["ByHook"], ["", "Reason"]) },
  // decidedText: not_run and an unknown outcome read as approved; "By" when someone decided (approved, denied), "Reason" with a reason.
  "decided.***": {
    keys: [
      ...cross(["decided."], approvalStates.filter((s) => s !== "outcome_unknown" && s !== "not_run"), ["", "Reason"]),
      ...cross(["decided."], ["approved", "denied"], ["By"], ["", "Reason"]),
    ],
  },
  "decided.outcome.*": { keys: prefix("decided.outcome.", all<Exclude<Outcome, "not_run" | "waiting">>()("ran", "interrupted", "not_sent", "unknown")) },
  // refusalText: the face's refusal codes the app says itself (others show the server's sentence).
  "gate.refusal.*": { ns: "chat", keys: prefix("gate.refusal.", REFUSAL_CODES) },
  "audit.refusal.*": { ns: "settings", keys: prefix("audit.refusal.", REFUSAL_CODES) },
  "item.noticeCode.*": { keys: prefix("item.noticeCode.", ["server_skipped", "server_dropped", "provider_state_lost", "auto_follow_up_limit", "decision_hook_failed"]) },
  // The signed link's page (link/LinkPage.tsx): the refusals it names, the request's state.
  "link.refused.*": { ns: "common", keys: prefix("link.refused.", [...LINK_REFUSALS, "other"]) },
  "link.state.*": { ns: "common", keys: prefix("link.state.", approvalStates) },
  // common and account
  "common:role.*": { keys: prefix("common:role.", roles) },
  "menu.roleBadge.*": { keys: prefix("menu.roleBadge.", roles) },
  "tokens.new.*": { keys: prefix("tokens.new.", copyStates) },
  "agents.clients.*": { keys: prefix("agents.clients.", agentClients) },
  // settings
  "badge.*": { keys: prefix("badge.", ["readOnly", "destructive", "openWorld"]) },
  "badge.*Title": { keys: prefix("badge.", ["readOnly", "destructive", "openWorld"], "Title") },
  "policyHint.*": { keys: prefix("policyHint.", defaultPolicies) },
  "field.*": { keys: prefix("field.", changedFields) },
  "source.*": { keys: prefix("source.", policySources) },
  "hook.decision.*": { keys: prefix("hook.decision.", hookDecisions) },
  "rules.decision.*": { keys: prefix("rules.decision.", ruleDecisions) },
  "rules.state.*": { keys: prefix("rules.state.", approvalStates) },
  "auditGroup.*": { keys: prefix("auditGroup.", ACTION_GROUPS.map((g) => g.value)) },
  "auditGroupText.*": { keys: prefix("auditGroupText.", ACTION_GROUPS.map((g) => g.value)) },
  "filter.*": { keys: prefix("filter.", TOOL_FILTERS) },
  "grants.states.*": { ns: "settings", keys: prefix("grants.states.", grantStates) },
  "webhooks.deliveries.states.*": { keys: prefix("webhooks.deliveries.states.", deliveryStates) },
  "webhooks.secret.*": { keys: prefix("webhooks.secret.", copyStates) },
  "webhooks.event.*": { keys: prefix("webhooks.event.", ["approvalRequired", "decisionRecorded"]) },
  "approvalStats.col.*": { ns: "settings", keys: prefix("approvalStats.col.", COUNTS) },
  "approvalStats.preset.*": { ns: "settings", keys: prefix("approvalStats.preset.", PRESETS) },
  "approvalStats.*": { ns: "settings", keys: prefix("approvalStats.", PERIOD_ERRORS) },
  "audit.policySet*": { keys: ["audit.policySet", "audit.policySetPersonal"] },
  "audit.policySetNew*": { keys: ["audit.policySetNew", "audit.policySetNewPersonal"] },
};

// ---- the source files and what they name ----

const src = fileURLToPath(new URL("..", import.meta.url));
const sources: { file: string; text: string }[] = [];
(function walk(dir: string) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p);
    else if (/\.tsx?$/.test(e.name) && !/\.test\.tsx?$|\.d\.ts$|^test-setup\.ts$|^testing\.tsx$|^testutil\.ts$|^testdata\.ts$/.test(e.name)) {
      sources.push({ file: relative(src, p), text: readFileSync(p, "utf8") });
    }
  }
})(src);

/** The namespaces a file translates with: useTranslation("chat"), TFunction<"chat">, getFixedT(…, "settings"), SettingsT. */
function namespacesOf(text: string): NS[] {
  const found = new Set<NS>();
  for (const m of text.matchAll(/useTranslation\(\s*(?:"(\w+)")?\s*\)|TFunction<\s*"(\w+)"|getFixedT\([^,()]*,\s*"(\w+)"/g)) {
    found.add((m[1] ?? m[2] ?? m[3] ?? "common") as NS);
  }
  if (/\bSettingsT\b/.test(text)) found.add("settings");
  return [...found].filter((n) => namespaces.includes(n));
}

/** A key's leaf in one language and namespace: the string, its plural forms (key_one, key_other), or undefined. */
function lookup(lng: (typeof langs)[number], ns: NS, key: string): string | undefined {
  const parts = key.split(".");
  const last = parts.pop()!;
  let node: string | Tree | undefined = resources[lng][ns] as Tree;
  for (const p of parts) node = typeof node === "object" ? node[p] : undefined;
  if (typeof node !== "object") return undefined;
  const v = node[last] ?? node[`${last}_other`];
  return typeof v === "string" ? v : undefined;
}

/** "chat:item.x" or "item.x" with the file's namespaces: what is missing where. */
function missing(key: string, nss: NS[]): string[] {
  const [ns, k] = key.includes(":") ? [[key.split(":")[0] as NS], key.split(":")[1]] : [nss, key];
  const out: string[] = [];
  for (const lng of langs) {
    if (!ns.some((n) => lookup(lng, n, k) !== undefined)) out.push(`${lng}/${ns.join("|")}: ${k}`);
  }
  return out;
}

/** The top-level groups of a namespace ("item", "card", "audit"…): a string literal "group.x…" in a file of that namespace is a key. */
const groups = (ns: NS) => Object.entries(resources.en[ns]).filter(([, v]) => typeof v === "object").map(([k]) => k);

const keyShape = /^(?:(\w+):)?([a-z]\w*)((?:\.\w+)+)$/;
/** Strings in code that look like keys but are not: audit actions ("policy.set"), event names. */
const notKeys = new Set<string>([
  ...all<S["AuditAction"]>()("server.create", "server.update", "server.delete", "server.tools_changed", "policy.set", "policy.delete",
    "policy.clear", "settings.update", "approval.decide", "rules.set", "tool.call", "grant.revoke", "webhook.create", "webhook.update", "webhook.delete",
    "decision_hook.set", "decision_hook.delete", "approval_card.set", "approval_card.delete"),
]);

interface Named { file: string; line: number; key: string; nss: NS[] }
interface Built { file: string; line: number; pattern: string }

const named: Named[] = [];
const built: Built[] = [];
for (const { file, text } of sources) {
  const nss = namespacesOf(text);
  if (!nss.length) continue;
  const lineOf = (i: number) => text.slice(0, i).split("\n").length;
  const gs = new Set(nss.flatMap(groups));
  // Plain strings: "…", '…' and `…` without ${}.
  for (const m of text.matchAll(/"((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)'|`([^`$]*)`/g)) {
    const s = m[1] ?? m[2] ?? m[3];
    const k = keyShape.exec(s);
    if (!k || notKeys.has(s)) continue;
    if (k[1] ? namespaces.includes(k[1] as NS) : gs.has(k[2])) named.push({ file, line: lineOf(m.index), key: s, nss });
  }
  // Built keys: `group.…${…}…` in a file of that group's namespace.
  for (const m of text.matchAll(/`((?:[^`\\]|\\.)*\$\{(?:[^`\\]|\\.)*)`/g)) {
    const pattern = m[1].replace(/\$\{(?:[^{}]|\{[^{}]*\})*\}/g, "*");
    const k = /^(?:(\w+):)?([a-z]\w*)\./.exec(pattern);
    if (k && (k[1] ? namespaces.includes(k[1] as NS) : gs.has(k[2]))) built.push({ file, line: lineOf(m.index), pattern });
  }
}

describe("every translation key the code uses exists in English and German", () => {
  it("the keys named in the code", () => {
    expect(named.length).toBeGreaterThan(300);
    const gaps = named.flatMap((n) => missing(n.key, n.nss).map((m) => `${n.file}:${n.line}: ${m}`));
    expect(gaps).toEqual([]);
  });

  it("the keys built in the code, for every value they can take", () => {
    const unlisted = built.filter((b) => !(b.pattern in DYNAMIC)).map((b) => `${b.file}:${b.line}: \`${b.pattern}\` (list its values in DYNAMIC)`);
    expect(unlisted).toEqual([]);
    const gaps: string[] = [];
    for (const b of built) {
      const { ns, keys } = DYNAMIC[b.pattern];
      const nss = ns ? [ns] : namespacesOf(sources.find((s) => s.file === b.file)!.text);
      const perNs: [NS[], readonly string[]][] = Array.isArray(keys) ? [[nss, keys]]
        : nss.filter((n) => n in keys).map((n) => [[n], (keys as Record<NS, readonly string[]>)[n]]);
      expect(perNs.length, `${b.file}: \`${b.pattern}\` lists no keys for ${nss.join(", ")}`).toBeGreaterThan(0);
      for (const [n, ks] of perNs) for (const key of ks) for (const m of missing(key, n)) gaps.push(`${b.file}:${b.line} \`${b.pattern}\`: ${m}`);
    }
    expect(gaps).toEqual([]);
  });
});
