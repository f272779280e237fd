// The REST client: one fetch wrapper, and one error type carrying the API's
// {error: {code, message, fields, details}} body.
import type {
  AuditPage, Conversation, Decision, Info, NewServer, Policy, Server, ServerPatch, Settings, Tool, Transcript,
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

/** fetch that turns network failures into ApiError too. */
export async function send(path: string, init: RequestInit = {}): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(path, init);
  } catch (err) {
    if (init.signal?.aborted) throw err;
    throw new ApiError(0, "network_error", "Toolgate could not be reached. Check that it is running, then try again.");
  }
  if (!res.ok) throw await errorFrom(res);
  return res;
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

export const api = {
  info: () => json<Info>("GET", "/api/info"),

  listServers: () => json<{ servers: Server[] }>("GET", "/api/mcp/servers").then((r) => r.servers),
  createServer: (s: NewServer) => json<Server>("POST", "/api/mcp/servers", s),
  updateServer: (label: string, p: ServerPatch) => json<Server>("PATCH", `/api/mcp/servers/${seg(label)}`, p),
  deleteServer: (label: string) => json<void>("DELETE", `/api/mcp/servers/${seg(label)}`),
  refreshServer: (label: string) =>
    json<{ tools: Tool[] }>("POST", `/api/mcp/servers/${seg(label)}/refresh`).then((r) => r.tools),

  listTools: (label: string) => json<{ tools: Tool[] }>("GET", `/api/mcp/servers/${seg(label)}/tools`).then((r) => r.tools),
  setPolicy: (label: string, tool: string, policy: Policy) =>
    json<unknown>("PUT", `/api/mcp/servers/${seg(label)}/tools/${seg(tool)}/approval-policy`, { policy }),
  deletePolicy: (label: string, tool: string) =>
    json<void>("DELETE", `/api/mcp/servers/${seg(label)}/tools/${seg(tool)}/approval-policy`),
  /** All or nothing; null removes a tool's policy. Returns every tool of the server. */
  setPolicies: (label: string, policies: Record<string, Policy | null>) =>
    json<{ tools: Tool[] }>("PUT", `/api/mcp/servers/${seg(label)}/tools/approval-policies`, { policies }).then((r) => r.tools),

  settings: () => json<Settings>("GET", "/api/settings"),
  updateSettings: (p: Partial<Pick<Settings, "default_policy" | "local_user">>) => json<Settings>("PUT", "/api/settings", p),
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
