// A decision hook's server state: the hook of one MCP server (label) or of
// the workspace (no label), read, saved, removed and tested over the
// generated client. A hook that is not set reads as null.
import { queryOptions, useMutation, useQueryClient } from "@tanstack/react-query";
import { ApiError, http } from "../api/client";
import type { components } from "../api/schema";

export type DecisionHook = components["schemas"]["DecisionHook"];
export type DecisionHookInput = components["schemas"]["DecisionHookInput"];
export type DecisionHookAnswer = components["schemas"]["DecisionHookAnswer"];

export const hookKey = (label?: string) => ["decision-hook", label ?? ""] as const;

const path = (label: string) => ({ params: { path: { serverId: label } } });

async function read(label?: string): Promise<DecisionHook | null> {
  try {
    const r = label ? await http.GET("/api/mcp/servers/{serverId}/decision-hook", path(label)) : await http.GET("/api/decision-hook");
    return r.data ?? null;
  } catch (err) {
    if (err instanceof ApiError && err.code === "decision_hook_not_set") return null; // not set yet
    throw err;
  }
}

export const decisionHookQuery = (label?: string) => queryOptions({ queryKey: hookKey(label), queryFn: () => read(label) });

export function useSaveHook(label?: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (body: DecisionHookInput) => {
      const r = label
        ? await http.PUT("/api/mcp/servers/{serverId}/decision-hook", { ...path(label), body })
        : await http.PUT("/api/decision-hook", { body });
      return r.data as DecisionHook;
    },
    // The answer is the hook; its secret (when generated) is shown from the mutation, never cached.
    onSuccess: (h) => qc.setQueryData(hookKey(label), { ...h, secret: undefined }),
  });
}

export function useDeleteHook(label?: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async () => {
      if (label) await http.DELETE("/api/mcp/servers/{serverId}/decision-hook", path(label));
      else await http.DELETE("/api/decision-hook");
    },
    onSuccess: () => qc.setQueryData(hookKey(label), null),
  });
}

export function useTestHook(label?: string) {
  return useMutation({
    mutationFn: async () => {
      const r = label
        ? await http.POST("/api/mcp/servers/{serverId}/decision-hook/test", path(label))
        : await http.POST("/api/decision-hook/test");
      return r.data as DecisionHookAnswer;
    },
  });
}
