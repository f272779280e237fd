// The REST client of the browser tests: the same generated openapi-fetch
// client the app uses (types from docs/openapi.yaml via src/api/schema.d.ts),
// pointed at the running toolgate and sending a browser's session cookie or a
// personal API token. For setting up state a test is not about, and for
// checking what the server holds.
import createClient, { type Client } from "openapi-fetch";
import type { paths } from "../src/api/schema";
import type { Policy, PolicyLayer, Tool } from "../src/api/types";

export type Api = Client<paths>;

/**
 * A client for baseUrl. auth: a Cookie header value ("toolgate_session=…",
 * what sessionCookie returns) or "Bearer tg_…" (toolgate.createToken).
 */
export function createApi(baseUrl: string, auth?: string): Api {
  const headers: Record<string, string> = !auth ? {} : auth.startsWith("Bearer ") ? { Authorization: auth } : { Cookie: auth };
  return createClient<paths>({ baseUrl, headers });
}

/** The body of a call that succeeded; a failure throws with its method, URL, status and the API's answer. */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) {
    const req = `${response.url}: ${response.status}`;
    throw new Error(`${req} ${JSON.stringify(error)}`);
  }
  return data as T;
}

/** Sets a tool's explicit policy (layer: workspace for an admin by default; locked: workspace only). */
export function setPolicy(api: Api, server: string, tool: string, policy: Policy,
  opts: { layer?: PolicyLayer; locked?: boolean } = {}): Promise<Tool> {
  return ok(api.PUT("/api/mcp/servers/{serverId}/tools/{toolName}/approval-policy", {
    params: { path: { serverId: server, toolName: tool }, query: opts.layer ? { layer: opts.layer } : {} },
    body: opts.locked === undefined ? { policy } : { policy, locked: opts.locked },
  })) as Promise<Tool>;
}

/** The server's tools as the caller sees them (policies, effective policies). */
export async function tools(api: Api, server: string): Promise<Tool[]> {
  return (await ok(api.GET("/api/mcp/servers/{serverId}/tools", { params: { path: { serverId: server } } }))).tools;
}
