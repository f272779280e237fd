// The chat's server state, all in TanStack Query: the conversation list, one
// conversation's transcript, /api/info, and renaming and deleting.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api } from "../api/client";
import { infoQuery, keys } from "../api/query";
import type { Conversation } from "../api/types";

/** How often a conversation whose turn runs without this page's stream (another tab, a reload) is read again. */
export const streamingPollMs = 1500;

/** /api/info: the shell's query (read once per page load). */
export function useInfo() {
  return useQuery(infoQuery);
}

export function useConversations() {
  return useQuery({
    queryKey: keys.conversations,
    queryFn: api.listConversations,
    // A turn runs somewhere: its "running" badge goes when it ends.
    refetchInterval: (q) => (q.state.data?.some((c) => c.streaming) ? streamingPollMs * 2 : false),
  });
}

/**
 * One conversation's transcript. While a turn runs that this page does not
 * stream (poll), it is read again until the server says it ended.
 */
export function useConversation(id: string | undefined, poll: boolean) {
  return useQuery({
    queryKey: keys.conversation(id ?? ""),
    queryFn: () => api.conversation(id!),
    enabled: id !== undefined,
    refetchInterval: (q) => (poll && q.state.data?.conversation.streaming ? streamingPollMs : false),
  });
}

/** The list only (a conversation's own key sits below it). */
export const invalidateList = (qc: ReturnType<typeof useQueryClient>) =>
  qc.invalidateQueries({ queryKey: keys.conversations, exact: true });

export function useRenameConversation() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: ({ id, title }: { id: string; title: string }) => api.renameConversation(id, title),
    onSuccess: (c: Conversation) => {
      qc.setQueryData<Conversation[]>(keys.conversations, (list) => list?.map((x) => (x.id === c.id ? c : x)));
      void invalidateList(qc);
      void qc.invalidateQueries({ queryKey: keys.conversation(c.id), exact: true });
    },
  });
}

export function useDeleteConversation() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (id: string) => api.deleteConversation(id),
    onSuccess: (_: unknown, id: string) => {
      qc.setQueryData<Conversation[]>(keys.conversations, (list) => list?.filter((x) => x.id !== id));
      qc.removeQueries({ queryKey: keys.conversation(id), exact: true });
      void invalidateList(qc);
    },
  });
}
