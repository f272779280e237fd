// Types of the REST API's JSON: every one is the generated type from
// docs/openapi.yaml (schema.d.ts, `npm run gen:api`), named for the app.
// Only the transcript items are narrowed here: the spec describes one item
// object whose fields depend on `type`; these are its variants.
import type { components, operations } from "./schema";

type S = components["schemas"];
type JSONOf<Op extends keyof operations, Code extends number = 200> =
  operations[Op]["responses"] extends Record<Code, { content: { "application/json": infer T } }> ? T : never;

export type Policy = S["Policy"];
/** A default may also resolve per tool from its MCP hints (the fresh-install default). */
export type DefaultPolicy = S["DefaultPolicy"];
/** Where a tool's effective policy comes from (see the policy table in docs/policies.md). */
export type PolicySource = S["PolicySource"];
/** Which layer a policy change is for: the workspace's (admins) or the caller's own. */
export type PolicyLayer = "workspace" | "user";
export type Role = S["Me"]["role"];

export type Me = S["Me"];
export type AuthStatus = JSONOf<"authStatus">;
export type User = S["User"];
export type ApiToken = JSONOf<"listTokens">["tokens"][number];
export type NewApiToken = JSONOf<"createToken", 201>;
/** "Approve for this conversation" (conversation_id set) or "for 1 hour" (expires_at set, all conversations). */
export type Grant = S["Grant"];

export type Webhook = S["Webhook"];
export type WebhookEvent = Webhook["events"][number];
/** The answer to creating a webhook: the only one that carries its secret. */
export type NewWebhook = JSONOf<"createWebhook", 201>;
export type WebhookDelivery = S["WebhookDelivery"];

export type AsksBecause = S["AsksBecause"];
export type ChangedField = "description" | "input_schema" | "annotations" | "title";
export type Annotations = S["Annotations"];

export type Server = S["Server"];
export type ServerHealth = S["ServerHealth"];
export type NewServer = S["NewServer"];
/** PATCH body: headers map a name to a new value, or null to remove it. */
export type ServerPatch = S["ServerPatch"];

export type Tool = S["Tool"];
export type DiscoveredTool = Pick<Tool, "name" | "title" | "description" | "input_schema" | "annotations">;
export type ToolPolicy = S["ToolPolicy"];
export type Settings = S["Settings"];
export type Rule = S["Rule"];
export type RuleDecision = Rule["decision"];
export type RuleTestResult = S["RuleTestResult"];
export type RuleTryResult = S["RuleTryResult"];
export type RuleTryCall = S["RuleTryCall"];
export type AuditEntry = S["AuditEntry"];
export type AuditPage = S["AuditPage"];
export type Info = S["Info"];
export type Conversation = S["Conversation"];
/** Which servers and tools a conversation offers (PUT /api/conversations/{id}/tools). */
export type ToolSelection = S["ToolSelection"];
export type ServerToolSelection = S["ServerToolSelection"];
export type ConversationTools = S["ConversationTools"];
export type ServerChoice = S["ServerChoice"];
export type AllowedBy = S["AllowedBy"];
export type Approval = S["Approval"];
export type ApprovalLinkView = S["ApprovalLinkView"];
export type ApprovalChoice = S["ApprovalChoice"];
export type ApprovalCardSettings = S["ApprovalCard"];
/** What Toolgate's MCP face saw of a call (gateway mode): on an approval (`call`) and on an mcp_call item (`call`). */
export type GatewayCall = S["GatewayCall"];
/** Why the face refused a call: a code and the sentence the model got. */
export type Refusal = S["GatewayRefusal"];
/** How a request differs from the one denied with a correction just before it. */
export type Corrects = S["Corrects"];
export type ArgChange = S["ArgChange"];
export type RuleCheck = S["RuleCheck"];
export type RuleRef = S["RuleRef"];
/** The decision hook that answered a request (a rules check with by "hook", a call allowed by kind "hook"). */
export type HookRef = S["HookRef"];
/**
 * not_run: approved, but the call provably did not run (the conversation can
 * go on; the model may ask again); outcome_unknown: Toolgate crashed between
 * forwarding the call and storing its result (it may have run; it is never
 * sent again); expired: it can no longer be answered (reason says why).
 */
export type ApprovalState = Approval["state"];
export type TurnError = S["TurnError"];
/** A transcript, its items narrowed to the variants below by `type`. */
export type Transcript = Omit<S["Transcript"], "items"> & { items: Item[] };
/** An approval request as the inbox lists it: the chat's card, and where it came from (`source`). */
export type InboxApproval = S["InboxApproval"];
export type InboxSource = S["InboxSource"];
/** The body of POST /api/approvals/{id}/decision: one chat decision. */
export type InboxDecision = S["InboxDecision"];
/** One decision in POST /api/responses/approval-response. */
export type Decision = S["Decision"];

type ItemBase = Omit<S["Item"], "type">;
export type UserMessageItem = ItemBase & { type: "user_message"; text: string };
export type MessageItem = ItemBase & { type: "message"; text: string };
export type ListToolsItem = ItemBase & { type: "mcp_list_tools"; server_label: string; upstream_label: string };
export type CallItem = ItemBase & { type: "mcp_call"; server_label: string; upstream_label: string; name: string };
export type ApprovalRequestItem = ItemBase & {
  type: "mcp_approval_request"; server_label: string; upstream_label: string; name: string; approval: Approval;
};
export type ErrorItem = ItemBase & { type: "error"; turn_error: TurnError };
/** Something the turn wants the person to know: a server left out, a conversation continued from its own transcript. */
export type Notice = S["Notice"];
export type NoticeItem = ItemBase & { type: "notice"; notice: Notice };

/** One transcript item; unknown types may appear later and are skipped. */
export type Item = UserMessageItem | MessageItem | ListToolsItem | CallItem | ApprovalRequestItem | ErrorItem | NoticeItem;
