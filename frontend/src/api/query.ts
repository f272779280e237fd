// Server state lives in TanStack Query: one QueryClient, and the query keys
// every screen shares, so a change in one place (a mutation, a stream event)
// invalidates exactly what shows it.
import { QueryClient, queryOptions } from "@tanstack/react-query";
import { ApiError, api } from "./client";

/** Query keys: one function per kind of server state. */
export const keys = {
  authStatus: ["auth", "status"] as const,
  me: ["auth", "me"] as const,
  info: ["info"] as const,
  users: ["users"] as const,
  tokens: ["tokens"] as const,
  /** Every grant list starts with "grants": a decision or a revoke invalidates them all. */
  grants: ["grants"] as const,
  myGrants: (ended: boolean) => ["grants", "mine", ended] as const,
  conversationGrants: (id: string) => ["grants", "conversation", id] as const,
  webhooks: ["webhooks"] as const,
  webhookDeliveries: (id: string) => ["webhooks", id, "deliveries"] as const,
  servers: ["servers"] as const,
  tools: (server: string) => ["servers", server, "tools"] as const,
  settings: ["settings"] as const,
  /** A list of argument rules: ["rules"] (workspace), ["rules", server] or ["rules", server, tool]. */
  rules: (server?: string, tool?: string) => ["rules", ...(server === undefined ? [] : [server]), ...(tool === undefined ? [] : [tool])] as const,
  audit: (filter: Record<string, string | undefined> = {}) => ["audit", filter] as const,
  approvalStats: (period: Record<string, string | undefined>) => ["approvalStats", period] as const,
  /** What waits for me across my chats and agents (GET /api/approvals?state=pending). */
  inbox: ["inbox"] as const,
  conversations: ["conversations"] as const,
  conversation: (id: string) => ["conversations", id] as const,
  conversationTools: (id: string) => ["conversations", id, "tools"] as const,
};

/** Reads the conversation list again: the list only (a conversation's own key sits below it). */
export const invalidateConversationList = (qc: QueryClient) =>
  qc.invalidateQueries({ queryKey: keys.conversations, exact: true });

/** /api/info does not change while Toolgate runs: read once per page load, shared by the top bar and the chat. */
export const infoQuery = queryOptions({ queryKey: keys.info, queryFn: () => api.info(), staleTime: Infinity });

/** The inbox: shared by the page and the count in the menu; the inbox stream says when to read it again. */
export const inboxQuery = queryOptions({ queryKey: keys.inbox, queryFn: () => api.inbox().then((r) => r.approvals) });

/** Client errors (4xx) are answers, not hiccups: they are not retried. */
function retry(failures: number, err: unknown): boolean {
  if (err instanceof ApiError && err.status >= 400 && err.status < 500) return false;
  return failures < 2;
}

export function newQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: { retry, refetchOnWindowFocus: true, staleTime: 5_000 },
      mutations: { retry: false },
    },
  });
}

/** For tests: no retries, nothing kept between tests. */
export function newTestQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: { queries: { retry: false, gcTime: Infinity, staleTime: 0 }, mutations: { retry: false } },
  });
}
