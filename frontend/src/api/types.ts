// Types of the REST API's JSON, as docs/openapi.yaml describes it.

export type Policy = "never" | "always" | "blocked";
/** A default may also resolve per tool from its MCP hints (the fresh-install default). */
export type DefaultPolicy = Policy | "ask_unless_read_only";
/** Where a tool's effective policy comes from (see the README's policy table). */
export type PolicySource = "tool" | "server" | "global" | "user" | "locked" | "new" | "changed";
/** Which layer a policy change is for: the workspace's (admins) or the caller's own. */
export type PolicyLayer = "workspace" | "user";
export type Role = "admin" | "member";

/** The signed-in person (GET /api/auth/me). */
export interface Me {
  id: string;
  email: string;
  role: Role;
}

/** GET /api/auth/status: how people sign in here. */
export interface AuthStatus {
  auth_mode: "local" | "oidc" | "none";
  setup_required: boolean;
  oidc: boolean;
  /** The offline demo prints a one-time sign-in link at every start. */
  sign_in_link: boolean;
}

/** An account as admins see it (GET /api/users). */
export interface User extends Me {
  disabled?: boolean;
  created_at?: string;
  last_login_at?: string | null;
}

/** A personal API token; its secret is only in the answer that creates it. */
export interface ApiToken {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

export interface NewApiToken {
  id: string;
  name: string;
  token: string;
  created_at: string;
}

/** Why a call asks (null when the tool runs without asking). */
export interface AsksBecause {
  reason: "not_read_only" | "new_tool" | "changed" | "read_only_changed" | "policy" | string;
  fields?: string[];
  [k: string]: unknown;
}

export type ChangedField = "description" | "input_schema" | "annotations" | "title";

export interface Annotations {
  title?: string;
  readOnlyHint?: boolean | null;
  destructiveHint?: boolean | null;
  idempotentHint?: boolean | null;
  openWorldHint?: boolean | null;
}

/** An MCP server as GET /api/mcp/servers shows it (header values masked). */
export interface Server {
  label: string;
  url: string;
  description: string;
  headers: Record<string, string>;
  default_policy: DefaultPolicy | null;
  default_policy_locked?: boolean;
  enabled: boolean;
  created_at: string;
  updated_at: string;
  tools_refreshed_at: string | null;
  tools_refresh_error: string | null;
  tool_count: number;
}

export interface NewServer {
  label: string;
  url: string;
  description?: string;
  headers?: Record<string, string>;
  default_policy?: DefaultPolicy | null;
  enabled?: boolean;
}

/** PATCH body: headers map a name to a new value, or null to remove it. */
export interface ServerPatch {
  url?: string;
  description?: string;
  headers?: Record<string, string | null>;
  default_policy?: DefaultPolicy | null;
  default_policy_locked?: boolean;
  enabled?: boolean;
}

export interface DiscoveredTool {
  name: string;
  title?: string;
  description: string;
  input_schema: unknown;
  annotations: Annotations;
}

/** A known tool of a server with its policy. */
export interface Tool extends DiscoveredTool {
  server_id: string;
  discovered: boolean;
  digest?: string;
  first_seen_at: string | null;
  definition_changed_at: string | null;
  policy: Policy | null;
  effective_policy: Policy;
  policy_source: PolicySource;
  policy_updated_at: string | null;
  policy_updated_by: string | null;
  /** The workspace's own policy for this tool is locked (admins). */
  policy_locked?: boolean;
  /** The caller's own policy for the tool (the personal layer). */
  user_policy?: Policy | null;
  /** The workspace setting that applies is locked: personal policies cannot loosen it. */
  locked?: boolean;
  asks_because?: AsksBecause | null;
  changed?: { fields: ChangedField[] | string[]; since: string | null } | null;
}

export interface Settings {
  default_policy: DefaultPolicy;
  default_policy_locked?: boolean;
  updated_at: string;
}

export interface AuditEntry {
  id: number;
  at: string;
  actor: string;
  action: string; // server.create, server.update, server.delete, server.tools_changed, policy.set, policy.delete, settings.update, approval.decide
  server_id: string | null;
  tool_name: string | null;
  before: unknown;
  after: unknown;
}

export interface AuditPage {
  entries: AuditEntry[];
  next_cursor: string | null;
}

export interface Info {
  offline: boolean;
  model: string;
  tool_layout: string;
  base_url: string;
}

export interface Conversation {
  id: string;
  title: string;
  created_at: string;
  updated_at: string;
  last_response_id: string | null;
  streaming: boolean;
  pending_approvals: number;
}

export type AllowedBy =
  | { kind: "policy"; policy: Policy; source: PolicySource | "unknown" }
  | { kind: "approval" }
  | { kind: "conversation" };

export type ApprovalState = "pending" | "approved" | "denied" | "superseded";

/** An approval request (approval.required, pending_approvals, and items' approval). */
export interface Approval {
  approval_request_id: string;
  conversation_id: string;
  response_id: string;
  server_label: string;
  upstream_label: string;
  tool_name: string;
  arguments: unknown;
  redacted: string[] | null;
  annotations: Annotations;
  asks_because: { policy: Policy; source: PolicySource | "unknown" | "conversation"; reason?: AsksBecause["reason"]; fields?: string[]; changed?: { fields: string[] } | null };
  requested_at: string;
  state: ApprovalState;
  decided_at: string | null;
  decided_by: string | null;
  decided_by_id: string | null;
  reason: string | null;
  scope: "once" | "conversation" | null;
  remember: boolean;
  answered_in: string | null;
}

export interface TurnError {
  code: string;
  message: string;
  retryable: boolean;
}

interface ItemBase {
  seq: number;
  id?: string;
  response_id?: string;
  created_at: string;
}

export interface UserMessageItem extends ItemBase { type: "user_message"; text: string }
export interface MessageItem extends ItemBase { type: "message"; text: string; partial?: boolean }
export interface ListToolsItem extends ItemBase {
  type: "mcp_list_tools";
  server_label: string;
  upstream_label: string;
  tools?: DiscoveredTool[];
  list_error?: unknown;
}
export interface CallItem extends ItemBase {
  type: "mcp_call";
  server_label: string;
  upstream_label: string;
  name: string;
  arguments: unknown;
  redacted?: string[];
  output?: string;
  error?: unknown;
  approval_request_id?: string;
  allowed_by?: AllowedBy;
}
export interface ApprovalRequestItem extends ItemBase {
  type: "mcp_approval_request";
  server_label: string;
  upstream_label: string;
  name: string;
  arguments: unknown;
  redacted?: string[];
  approval: Approval;
}
export interface ErrorItem extends ItemBase { type: "error"; turn_error: TurnError }

/** One transcript item; unknown types may appear later and are skipped. */
export type Item = UserMessageItem | MessageItem | ListToolsItem | CallItem | ApprovalRequestItem | ErrorItem;

export interface Transcript {
  conversation: Conversation;
  items: Item[];
  pending_approvals: Approval[];
}

/** One decision in POST /api/responses/approval-response. */
export interface Decision {
  approval_request_id: string;
  approve: boolean;
  reason?: string;
  remember?: boolean;
  scope?: "once" | "conversation";
}
