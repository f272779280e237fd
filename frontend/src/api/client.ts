// The REST client: one fetch wrapper, and one error type carrying the API's
// {error: {code, message, fields, details}} body.
import type {
  ApiToken, AuditPage, AuthStatus, Conversation, Decision, DefaultPolicy, Info, Me, NewApiToken, NewServer, Policy,
  PolicyLayer, Role, Server, ServerPatch, Settings, Tool, Transcript, User,
} from "./types";

/** An error the API answered with (or a network failure: status 0, code "network_error"). */
export class ApiError extends Error {
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
  try { body = await res.json(); } catch { /* not JSON: a proxy's page */ }
  const e = body.error ?? {};
  return new ApiError(res.status, e.code ?? `http_${res.status}`,
    e.message ?? `The server answered ${res.status} ${res.statusText}.`, e.fields ?? {}, e.details);
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

/** fetch that turns network failures into ApiError too. */
export async function send(path: string, init: RequestInit = {}): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(path, init);
  } catch (err) {
    if (init.signal?.aborted) throw err;
    throw new ApiError(0, "network_error", "Toolgate could not be reached. Check that it is running, then try again.");
  }
  if (!res.ok) {
    const err = await errorFrom(res);
    if (res.status === 429) {
      const after = Number(res.headers.get("Retry-After"));
      if (Number.isFinite(after) && after > 0) (err as ApiError & { retryAfter?: number }).retryAfter = after;
    }
    if (res.status === 401 && !quiet401(path)) signedOutListeners.forEach((l) => l());
    throw err;
  }
  return res;
}

/** Seconds from a 429's Retry-After header, when it had one. */
export function retryAfterOf(err: unknown): number | undefined {
  return err instanceof ApiError ? (err as ApiError & { retryAfter?: number }).retryAfter : undefined;
}

async function json<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await send(path, {
    method,
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 204) return undefined as T;
  return res.json() as Promise<T>;
}

const seg = encodeURIComponent;

const layerQuery = (layer?: PolicyLayer) => (layer ? `?layer=${layer}` : "");

export const api = {
  info: () => json<Info>("GET", "/api/info"),

  authStatus: () => json<AuthStatus>("GET", "/api/auth/status"),
  me: () => json<Me>("GET", "/api/auth/me"),
  login: (email: string, password: string) => json<Me>("POST", "/api/auth/login", { email, password }),
  logout: () => json<void>("POST", "/api/auth/logout"),
  setup: (token: string, email: string, password: string) => json<Me>("POST", "/api/auth/setup", { token, email, password }),

  listUsers: () => json<{ users: User[] } | User[]>("GET", "/api/users").then((r) => (Array.isArray(r) ? r : r.users)),
  createUser: (u: { email: string; password: string; role: Role }) => json<User>("POST", "/api/users", u),
  updateUser: (id: string, p: { role?: Role; disabled?: boolean; password?: string }) =>
    json<User>("PATCH", `/api/users/${seg(id)}`, p),

  listTokens: () => json<{ tokens: ApiToken[] }>("GET", "/api/tokens").then((r) => r.tokens),
  createToken: (name: string) => json<NewApiToken>("POST", "/api/tokens", { name }),
  deleteToken: (id: string) => json<void>("DELETE", `/api/tokens/${seg(id)}`),

  listServers: () => json<{ servers: Server[] }>("GET", "/api/mcp/servers").then((r) => r.servers),
  createServer: (s: NewServer) => json<Server>("POST", "/api/mcp/servers", s),
  updateServer: (label: string, p: ServerPatch) => json<Server>("PATCH", `/api/mcp/servers/${seg(label)}`, p),
  deleteServer: (label: string) => json<void>("DELETE", `/api/mcp/servers/${seg(label)}`),
  refreshServer: (label: string) =>
    json<{ tools: Tool[] }>("POST", `/api/mcp/servers/${seg(label)}/refresh`).then((r) => r.tools),

  listTools: (label: string) => json<{ tools: Tool[] }>("GET", `/api/mcp/servers/${seg(label)}/tools`).then((r) => r.tools),
  /** layer: "workspace" (admins) or "user" (the caller's own); locked applies to the workspace layer only. */
  setPolicy: (label: string, tool: string, policy: Policy, layer?: PolicyLayer, locked?: boolean) =>
    json<unknown>("PUT", `/api/mcp/servers/${seg(label)}/tools/${seg(tool)}/approval-policy${layerQuery(layer)}`,
      locked === undefined ? { policy } : { policy, locked }),
  deletePolicy: (label: string, tool: string, layer?: PolicyLayer) =>
    json<void>("DELETE", `/api/mcp/servers/${seg(label)}/tools/${seg(tool)}/approval-policy${layerQuery(layer)}`),
  /** All or nothing; null removes a tool's policy. Returns every tool of the server. */
  setPolicies: (label: string, policies: Record<string, Policy | null>) =>
    json<{ tools: Tool[] }>("PUT", `/api/mcp/servers/${seg(label)}/tools/approval-policies`, { policies }).then((r) => r.tools),

  settings: () => json<Settings>("GET", "/api/settings"),
  updateSettings: (p: { default_policy?: DefaultPolicy; default_policy_locked?: boolean }) => json<Settings>("PUT", "/api/settings", p),
  audit: (q: { limit?: number; cursor?: string; action?: string; server_id?: string } = {}) => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== "") p.set(k, String(v));
    const qs = p.toString();
    return json<AuditPage>("GET", `/api/audit${qs ? "?" + qs : ""}`);
  },

  listConversations: () =>
    json<{ conversations: Conversation[] }>("GET", "/api/conversations").then((r) => r.conversations),
  createConversation: (title?: string) => json<Conversation>("POST", "/api/conversations", title ? { title } : {}),
  conversation: (id: string) => json<Transcript>("GET", `/api/conversations/${seg(id)}`),
  renameConversation: (id: string, title: string) => json<Conversation>("PATCH", `/api/conversations/${seg(id)}`, { title }),
  deleteConversation: (id: string) => json<void>("DELETE", `/api/conversations/${seg(id)}`),
  cancel: (id: string) => json<{ cancelled: boolean }>("POST", `/api/conversations/${seg(id)}/cancel`),
};

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
