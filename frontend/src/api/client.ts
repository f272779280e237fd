// The REST client: generated from docs/openapi.yaml (openapi-typescript
// writes schema.d.ts, `npm run gen:api`; openapi-fetch types every call by
// path and method), plus one error type carrying the API's
// {error: {code, message, fields, details}} body. Nothing here is written by
// hand from the spec: a path, parameter or body the spec does not have is a
// type error.
import createClient, { type Middleware } from "openapi-fetch";
import type { paths } from "./schema";
import type {
  ApprovalChoice,
  Decision, DefaultPolicy, InboxDecision, NewServer, Policy, PolicyLayer, Role, Rule, ServerPatch, ToolSelection, Transcript, WebhookEvent,
} from "./types";

/** An error the API answered with (or a network failure: status 0, code "network_error"). */
export class ApiError extends Error {
  retryAfter?: number;
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: Record<string, string> = {},
    readonly details?: unknown,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** Turns a non-2xx Response into an ApiError with the server's sentence. */
export async function errorFrom(res: Response): Promise<ApiError> {
  let body: { error?: { code?: string; message?: string; fields?: Record<string, string>; details?: unknown } } = {};
  try { body = await res.clone().json(); } catch { /* not JSON: a proxy's page */ }
  const e = body.error ?? {};
  const err = new ApiError(res.status, e.code ?? `http_${res.status}`,
    e.message ?? `The server answered ${res.status} ${res.statusText}.`, e.fields ?? {}, e.details);
  if (res.status === 429) {
    const after = Number(res.headers.get("Retry-After"));
    if (Number.isFinite(after) && after > 0) err.retryAfter = after;
  }
  return err;
}

// Told when the API answers 401 to a signed-in call: the session ended
// (expired, revoked, signed out elsewhere). The app then shows the login page.
const signedOutListeners = new Set<() => void>();

/** Calls fn whenever an API call answers 401 (except the sign-in calls themselves); returns the unsubscribe. */
export function onSignedOut(fn: () => void): () => void {
  signedOutListeners.add(fn);
  return () => { signedOutListeners.delete(fn); };
}

/** The sign-in routes answer 401 as part of their job (wrong password, not signed in yet). */
const quiet401 = (path: string) => path.startsWith("/api/auth/");

const networkError = () =>
  new ApiError(0, "network_error", "Toolgate could not be reached. Check that it is running, then try again.");

async function check(path: string, res: Response): Promise<Response> {
  if (res.ok) return res;
  const err = await errorFrom(res);
  if (res.status === 401 && !quiet401(path)) signedOutListeners.forEach((l) => l());
  throw err;
}

/** fetch for the streaming routes (text/event-stream): failures become ApiError too. */
export async function send(path: string, init: RequestInit = {}): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(path, init);
  } catch (err) {
    if (init.signal?.aborted) throw err;
    throw networkError();
  }
  return check(path, res);
}

/** Seconds from a 429's Retry-After header, when it had one. */
export function retryAfterOf(err: unknown): number | undefined {
  return err instanceof ApiError ? err.retryAfter : undefined;
}

// Every non-2xx answer throws an ApiError, so callers (and TanStack Query)
// see one kind of failure; a network failure throws one with status 0.
const errors: Middleware = {
  async onResponse({ request, response }) {
    return check(new URL(request.url).pathname, response);
  },
  onError({ request, error }) {
    if (request.signal.aborted) return error instanceof Error ? error : new Error(String(error));
    return error instanceof ApiError ? error : networkError();
  },
};

const origin = () => (typeof location !== "undefined" && location.origin !== "null" ? location.origin : "http://localhost");

/** The typed client for every JSON route of docs/openapi.yaml. */
export const http = createClient<paths>({
  baseUrl: origin(),
  // Looked up at call time, so tests can stub the global fetch.
  fetch: (req) => globalThis.fetch(req),
});
http.use(errors);

/** The body of a call that succeeded (errors have already thrown). */
async function ok<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const r = await p;
  return r.data as T;
}

/** The typed calls the app makes, each one line over the generated client. */
export const api = {
  info: () => ok(http.GET("/api/info")),

  /** What waits for me, across my chats and agents (the inbox). */
  inbox: () => ok(http.GET("/api/approvals", { params: { query: { state: "pending" } } })),
  /** One decision on a request of mine, by its id alone: a chat's or an agent's. */
  decideWaiting: (id: string, body: InboxDecision) =>
    ok(http.POST("/api/approvals/{approvalRequestId}/decision", { params: { path: { approvalRequestId: id } }, body })),

  authStatus: () => ok(http.GET("/api/auth/status")),
  me: () => ok(http.GET("/api/auth/me")),
  login: (email: string, password: string) => ok(http.POST("/api/auth/login", { body: { email, password } })),
  logout: () => ok(http.POST("/api/auth/logout")),
  setup: (token: string, email: string, password: string) =>
    ok(http.POST("/api/auth/setup", { body: { token, email, password } })),

  listUsers: () => ok(http.GET("/api/users")).then((r) => r.users),
  createUser: (u: { email: string; password: string; role: Role }) => ok(http.POST("/api/users", { body: u })),
  updateUser: (id: string, p: { role?: Role; disabled?: boolean; password?: string }) =>
    ok(http.PATCH("/api/users/{userId}", { params: { path: { userId: id } }, body: p })),

  listTokens: () => ok(http.GET("/api/tokens")).then((r) => r.tokens),
  createToken: (name: string) => ok(http.POST("/api/tokens", { body: { name } })),
  deleteToken: (id: string) => ok(http.DELETE("/api/tokens/{tokenId}", { params: { path: { tokenId: id } } })),

  /** The caller's grants: live ones, or with includeEnded the expired and revoked ones too. */
  listGrants: (includeEnded = false) =>
    ok(http.GET("/api/grants", { params: { query: includeEnded ? { include: "expired" } : {} } })).then((r) => r.grants),
  conversationGrants: (id: string) =>
    ok(http.GET("/api/conversations/{conversationId}/grants", { params: { path: { conversationId: id } } })).then((r) => r.grants),
  revokeGrant: (id: string) => ok(http.DELETE("/api/grants/{grantId}", { params: { path: { grantId: id } } })),
  listWebhooks: () => ok(http.GET("/api/webhooks")).then((r) => r.webhooks),
  createWebhook: (w: { url: string; events: WebhookEvent[]; description?: string }) => ok(http.POST("/api/webhooks", { body: w })),
  updateWebhook: (id: string, p: { enabled?: boolean; url?: string; events?: WebhookEvent[]; description?: string }) =>
    ok(http.PATCH("/api/webhooks/{webhookId}", { params: { path: { webhookId: id } }, body: p })),
  deleteWebhook: (id: string) => ok(http.DELETE("/api/webhooks/{webhookId}", { params: { path: { webhookId: id } } })),
  testWebhook: (id: string) => ok(http.POST("/api/webhooks/{webhookId}/test", { params: { path: { webhookId: id } } })),
  webhookDeliveries: (id: string) =>
    ok(http.GET("/api/webhooks/{webhookId}/deliveries", { params: { path: { webhookId: id } } })).then((r) => r.deliveries),

  /** The card a signed approve or deny link opens; it decides nothing. */
  viewApprovalLink: (approvalRequestId: string, token: string) =>
    ok(http.POST("/api/approval-links/view", { body: { approval_request_id: approvalRequestId, token } })),
  /** The link's decision, once, as the person it was sent for. */
  decideByApprovalLink: (approvalRequestId: string, token: string, reason?: string) =>
    ok(http.POST("/api/approval-links/decision", { body: { approval_request_id: approvalRequestId, token, reason: reason || null } })),

  listServers: () => ok(http.GET("/api/mcp/servers")).then((r) => r.servers),
  createServer: (s: NewServer) => ok(http.POST("/api/mcp/servers", { body: s })),
  updateServer: (label: string, p: ServerPatch) =>
    ok(http.PATCH("/api/mcp/servers/{serverId}", { params: { path: { serverId: label } }, body: p })),
  deleteServer: (label: string) => ok(http.DELETE("/api/mcp/servers/{serverId}", { params: { path: { serverId: label } } })),
  refreshServer: (label: string) =>
    ok(http.POST("/api/mcp/servers/{serverId}/refresh", { params: { path: { serverId: label } } })).then((r) => r.tools),

  listTools: (label: string) =>
    ok(http.GET("/api/mcp/servers/{serverId}/tools", { params: { path: { serverId: label } } })).then((r) => r.tools),
  /** layer: "workspace" (admins) or "user" (the caller's own); locked applies to the workspace layer only. Returns the tool. */
  setPolicy: (label: string, tool: string, policy: Policy, layer?: PolicyLayer, locked?: boolean) =>
    ok(http.PUT("/api/mcp/servers/{serverId}/tools/{toolName}/approval-policy", {
      params: { path: { serverId: label, toolName: tool }, query: layer ? { layer } : {} },
      body: locked === undefined ? { policy } : { policy, locked },
    })),
  /** Returns the tool with its policy from the default. */
  deletePolicy: (label: string, tool: string, layer?: PolicyLayer) =>
    ok(http.DELETE("/api/mcp/servers/{serverId}/tools/{toolName}/approval-policy", {
      params: { path: { serverId: label, toolName: tool }, query: layer ? { layer } : {} },
    })),
  /** Removes every tool policy of the server in one layer ("user": the caller's own). Says how many and which. */
  clearPolicies: (label: string, layer: PolicyLayer) =>
    ok(http.DELETE("/api/mcp/servers/{serverId}/tools/approval-policies", {
      params: { path: { serverId: label }, query: { layer: layer === "user" ? "mine" : layer } },
    })),
  /** All or nothing; null removes a tool's policy. Returns every tool of the server. */
  setPolicies: (label: string, policies: Record<string, Policy | null>) =>
    ok(http.PUT("/api/mcp/servers/{serverId}/tools/approval-policies", {
      params: { path: { serverId: label } }, body: { policies },
    })).then((r) => r.tools),

  /** The words and choices admins set for a server's tools (only tools with one). */
  approvalCards: (label: string) =>
    ok(http.GET("/api/mcp/servers/{serverId}/approval-cards", { params: { path: { serverId: label } } })).then((r) => r.cards),
  /** Admins only: a tool's approval text and the choices its card offers (null: every choice). */
  putApprovalCard: (label: string, tool: string, body: { approval_text: string | null; choices: ApprovalChoice[] | null }) =>
    ok(http.PUT("/api/mcp/servers/{serverId}/tools/{toolName}/approval-card", {
      params: { path: { serverId: label, toolName: tool } }, body,
    })),
  deleteApprovalCard: (label: string, tool: string) =>
    ok(http.DELETE("/api/mcp/servers/{serverId}/tools/{toolName}/approval-card", {
      params: { path: { serverId: label, toolName: tool } },
    })),

  /** Argument rules (CEL) of one list: a tool's, a server's (tool undefined) or the workspace's (neither). */
  rules: (list: RuleListRef) => ok(rulesCall("GET", list)).then((r) => r.rules),
  /** Admins only; an invalid rule answers 400 with details.rule_index (and line/column). */
  putRules: (list: RuleListRef, rules: Rule[]) => ok(rulesCall("PUT", list, rules)).then((r) => r.rules),
  testRules: (body: { rules: Rule[]; tool?: string; server?: string; args?: Record<string, unknown> }) =>
    ok(http.POST("/api/rules/test", { body })),
  /** Candidate rules over the tool's recent approval requests (the caller's own; an admin's: everyone's). */
  tryRules: (server: string, tool: string, rules: Rule[], limit?: number) =>
    ok(http.POST("/api/mcp/servers/{serverId}/tools/{toolName}/rules/try", {
      params: { path: { serverId: server, toolName: tool } }, body: limit ? { rules, limit } : { rules },
    })),

  settings: () => ok(http.GET("/api/settings")),
  updateSettings: (p: { default_policy?: DefaultPolicy; default_policy_locked?: boolean }) =>
    ok(http.PUT("/api/settings", { body: p })),
  /** Per tool, what the audit log says about its calls and approval requests in a period (admins). */
  approvalStats: (q: { from?: string; to?: string } = {}) => ok(http.GET("/api/approvals/stats", { params: { query: q } })),
  audit: (q: { limit?: number; cursor?: string; action?: string; server_label?: string } = {}) => {
    const query = Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined && v !== ""));
    return ok(http.GET("/api/audit", { params: { query } }));
  },

  listConversations: () => ok(http.GET("/api/conversations")).then((r) => r.conversations),
  createConversation: (title?: string, tools?: ToolSelection) =>
    ok(http.POST("/api/conversations", { body: { ...(title ? { title } : {}), ...(tools ? { tools } : {}) } })),
  /** Which servers and tools a conversation offers, and what it chooses from. */
  conversationTools: (id: string) =>
    ok(http.GET("/api/conversations/{conversationId}/tools", { params: { path: { conversationId: id } } })),
  setConversationTools: (id: string, tools: ToolSelection) =>
    ok(http.PUT("/api/conversations/{conversationId}/tools", { params: { path: { conversationId: id } }, body: tools })),
  conversation: (id: string) =>
    ok(http.GET("/api/conversations/{conversationId}", { params: { path: { conversationId: id } } })) as Promise<Transcript>,
  renameConversation: (id: string, title: string) =>
    ok(http.PATCH("/api/conversations/{conversationId}", { params: { path: { conversationId: id } }, body: { title } })),
  deleteConversation: (id: string) =>
    ok(http.DELETE("/api/conversations/{conversationId}", { params: { path: { conversationId: id } } })),
  cancel: (id: string) =>
    ok(http.POST("/api/conversations/{conversationId}/cancel", { params: { path: { conversationId: id } } })),
};

/** Which list of argument rules: the workspace's ({}), a server's ({server}) or a tool's ({server, tool}). */
export interface RuleListRef { server?: string; tool?: string }

function rulesCall(method: "GET" | "PUT", { server, tool }: RuleListRef, rules?: Rule[]) {
  const body = { rules: rules ?? [] };
  if (server !== undefined && tool !== undefined) {
    const params = { path: { serverId: server, toolName: tool } };
    return method === "GET"
      ? http.GET("/api/mcp/servers/{serverId}/tools/{toolName}/rules", { params })
      : http.PUT("/api/mcp/servers/{serverId}/tools/{toolName}/rules", { params, body });
  }
  if (server !== undefined) {
    const params = { path: { serverId: server } };
    return method === "GET"
      ? http.GET("/api/mcp/servers/{serverId}/rules", { params })
      : http.PUT("/api/mcp/servers/{serverId}/rules", { params, body });
  }
  return method === "GET" ? http.GET("/api/rules") : http.PUT("/api/rules", { body });
}

const seg = encodeURIComponent;

/** GET: a conversation's events, live (text/event-stream; see useConversationEvents). The route is checked against the spec. */
const eventsRoute = "/api/conversations/{conversationId}/events" satisfies keyof paths;
export const eventsPath = (conversationId: string) => eventsRoute.replace("{conversationId}", seg(conversationId));

/** GET: settings changes, live (text/event-stream; see useSettingsEvents). */
export const settingsEventsPath = "/api/settings/events" satisfies keyof paths;

/** GET: the inbox's changes, live (text/event-stream; see useInboxEvents). */
export const inboxEventsPath = "/api/approvals/events" satisfies keyof paths;

/** Stream requests: each answers text/event-stream (see useChatStream). */
export const streams = {
  message: (input: string, conversationId?: string) => ({
    path: "/api/responses",
    body: conversationId ? { input, conversation_id: conversationId } : { input },
  }),
  decisions: (conversationId: string, decisions: Decision[]) => ({
    path: "/api/responses/approval-response",
    body: { conversation_id: conversationId, decisions },
  }),
  retry: (conversationId: string) => ({ path: `/api/conversations/${seg(conversationId)}/retry`, body: {} }),
};
