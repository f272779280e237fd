// The chat's server state, all in TanStack Query: the conversation list, one
// conversation's transcript, /api/info, and renaming and deleting.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useSyncExternalStore } from "react";
import { api } from "../api/client";
import { infoQuery, invalidateConversationList, keys } from "../api/query";
import type { Conversation } from "../api/types";
import { feedOf } from "./conversationFeed";

/** How often the list is read again while a conversation in it runs a turn (the open one is followed by its events stream). */
export const listPollMs = 3000;

/** /api/info: the shell's query (read once per page load). */
export function useInfo() {
  return useQuery(infoQuery);
}

/** How often a hidden tab reads the list, so its title and notifications learn of cards waiting elsewhere. */
export const hiddenListPollMs = 15_000;

function subscribeVisibility(fn: () => void) {
  document.addEventListener("visibilitychange", fn);
  return () => document.removeEventListener("visibilitychange", fn);
}

/** Whether the tab is hidden now (re-renders when it changes). */
export function useDocumentHidden() {
  return useSyncExternalStore(subscribeVisibility, () => document.hidden, () => false);
}

export function useConversations() {
  const hidden = useDocumentHidden();
  return useQuery({
    queryKey: keys.conversations,
    queryFn: api.listConversations,
    // A turn runs in a conversation that is not open here: its "running" badge goes when it ends.
    // A hidden tab (whose events stream is let go after a while) reads it now and then for waiting cards.
    refetchInterval: (q) => (q.state.data?.some((c) => c.streaming) ? listPollMs : hidden ? hiddenListPollMs : false),
    refetchIntervalInBackground: hidden,
  });
}

/**
 * One conversation's transcript. It is not polled: its events stream
 * (useConversationEvents) keeps it current, and events that arrive while it
 * is read are applied on top of the read (see ConversationFeed.reconcile).
 */
export function useConversation(id: string | undefined) {
  const qc = useQueryClient();
  return useQuery({
    queryKey: keys.conversation(id ?? ""),
    queryFn: async () => feedOf(qc, id!).reconcile(await api.conversation(id!)),
    enabled: id !== undefined,
  });
}

export function useRenameConversation() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: ({ id, title }: { id: string; title: string }) => api.renameConversation(id, title),
    onSuccess: (c: Conversation) => {
      qc.setQueryData<Conversation[]>(keys.conversations, (list) => list?.map((x) => (x.id === c.id ? c : x)));
      void invalidateConversationList(qc);
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
      void invalidateConversationList(qc);
    },
  });
}
