// The settings page's server state, all in TanStack Query: the servers, each
// server's tools, the global settings, and every change to them as a
// mutation (the server and settings changes are in serverMutations.ts).
// Policy and default changes are optimistic: the cache shows the
// new choice at once (onMutate), goes back to what it was when saving fails
// (onError), and is read again from the API once the last change to a
// server's tools has settled (onSettled), so an earlier answer never undoes a
// later choice.
import { queryOptions, useMutation, useQueryClient, type QueryClient } from "@tanstack/react-query";
import { api } from "../api/client";
import { keys } from "../api/query";
import type { Policy, PolicyLayer, Server, Tool } from "../api/types";

export const serversQuery = queryOptions({ queryKey: keys.servers, queryFn: () => api.listServers() });
export const settingsQuery = queryOptions({ queryKey: keys.settings, queryFn: () => api.settings() });
export const toolsQuery = (label: string) => queryOptions({ queryKey: keys.tools(label), queryFn: () => api.listTools(label) });

/** Every change that moves a server's tools shares this key's prefix. */
export const toolsChange = (label: string) => ["tools-change", label] as const;

function mapTools(qc: QueryClient, label: string, fn: (t: Tool) => Tool) {
  qc.setQueryData<Tool[]>(keys.tools(label), (ts) => ts?.map(fn));
}

export function mapServers(qc: QueryClient, fn: (s: Server[]) => Server[]) {
  qc.setQueryData<Server[]>(keys.servers, (ss) => ss && fn(ss));
}

/**
 * After the last in-flight change to a server's tools: read them again. Not
 * awaited: the control is done when the API answered the change.
 */
export function settleTools(qc: QueryClient, label: string) {
  // This change still counts as in flight while it settles.
  if (qc.isMutating({ mutationKey: toolsChange(label) }) <= 1) {
    void qc.invalidateQueries({ queryKey: keys.tools(label) });
  }
}

/** The only change in flight for the server: its answer may replace the cache at once. */
const alone = (qc: QueryClient, label: string) => qc.isMutating({ mutationKey: toolsChange(label) }) <= 1;

export interface PolicyChange {
  /** null removes the layer's policy (Use default / Use workspace). */
  policy: Policy | null;
  /** Workspace layer only: lock or unlock; absent keeps the lock. */
  locked?: boolean;
}

/** One tool's policy on one layer (workspace: admins; user: the caller's own). */
export function usePolicyMutation(label: string, tool: string, layer: PolicyLayer) {
  const qc = useQueryClient();
  const mine = (t: Tool) => t.name === tool;
  return useMutation({
    mutationKey: [...toolsChange(label), tool, layer],
    mutationFn: ({ policy, locked }: PolicyChange) =>
      policy === null ? api.deletePolicy(label, tool, layer) : api.setPolicy(label, tool, policy, layer, locked),
    onMutate: async ({ policy, locked }) => {
      await qc.cancelQueries({ queryKey: keys.tools(label) });
      const before = qc.getQueryData<Tool[]>(keys.tools(label))?.find(mine);
      mapTools(qc, label, (t) => {
        if (!mine(t)) return t;
        if (layer === "user") return { ...t, user_policy: policy };
        const lock = policy === null ? false : locked ?? t.policy_locked;
        return { ...t, policy, policy_locked: lock, locked: locked === undefined ? t.locked : lock };
      });
      return { before };
    },
    onError: (_err, _v, ctx) => {
      const b = ctx?.before;
      if (!b) return;
      mapTools(qc, label, (t) => (!mine(t) ? t : layer === "user"
        ? { ...t, user_policy: b.user_policy }
        : { ...t, policy: b.policy, policy_locked: b.policy_locked, locked: b.locked }));
    },
    onSuccess: (answer) => {
      if (alone(qc, label)) mapTools(qc, label, (t) => (mine(t) ? answer : t));
    },
    onSettled: () => settleTools(qc, label),
  });
}

/** Removes every tool policy of a server in one layer; the tools are read again afterwards. */
export function useClearPolicies(label: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationKey: [...toolsChange(label), "clear"],
    mutationFn: (layer: PolicyLayer) => api.clearPolicies(label, layer),
    onSettled: () => settleTools(qc, label),
  });
}

/** Sets Ask on the named tools of a server (all or nothing). */
export function useAskForDestructive(label: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationKey: [...toolsChange(label), "bulk"],
    mutationFn: (names: string[]) => api.setPolicies(label, Object.fromEntries(names.map((n) => [n, "always" as const]))),
    onMutate: async (names) => {
      await qc.cancelQueries({ queryKey: keys.tools(label) });
      const before = qc.getQueryData<Tool[]>(keys.tools(label))?.filter((t) => names.includes(t.name)) ?? [];
      mapTools(qc, label, (t) => (names.includes(t.name) ? { ...t, policy: "always" } : t));
      return { before };
    },
    onError: (_err, _names, ctx) => restorePolicies(qc, label, ctx?.before ?? []),
    onSuccess: (tools) => {
      if (alone(qc, label)) qc.setQueryData(keys.tools(label), tools);
    },
    onSettled: () => settleTools(qc, label),
  });
}

function restorePolicies(qc: QueryClient, label: string, before: Tool[]) {
  mapTools(qc, label, (t) => {
    const b = before.find((x) => x.name === t.name);
    return b ? { ...t, policy: b.policy } : t;
  });
}

export interface BulkTarget { label: string; names: string[] }
export interface BulkResult extends BulkTarget { error?: unknown }

/** Sets Ask on destructive tools of several servers; each server's change stands or fails on its own. */
export function useAskForDestructiveEverywhere() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (targets: BulkTarget[]): Promise<BulkResult[]> => {
      const answers = await Promise.allSettled(targets.map(({ label, names }) =>
        api.setPolicies(label, Object.fromEntries(names.map((n) => [n, "always" as const])))));
      return targets.map((target, i) => {
        const a = answers[i];
        if (a.status === "fulfilled") qc.setQueryData(keys.tools(target.label), a.value);
        return a.status === "fulfilled" ? target : { ...target, error: a.reason };
      });
    },
    onMutate: async (targets) => {
      const before: Record<string, Tool[]> = {};
      for (const { label, names } of targets) {
        await qc.cancelQueries({ queryKey: keys.tools(label) });
        before[label] = qc.getQueryData<Tool[]>(keys.tools(label))?.filter((t) => names.includes(t.name)) ?? [];
        mapTools(qc, label, (t) => (names.includes(t.name) ? { ...t, policy: "always" } : t));
      }
      return { before };
    },
    onSuccess: (results, _t, ctx) => {
      for (const r of results) if (r.error) restorePolicies(qc, r.label, ctx.before[r.label] ?? []);
    },
    onError: (_err, targets, ctx) => {
      for (const { label } of targets) restorePolicies(qc, label, ctx?.before[label] ?? []);
    },
    onSettled: (_r, _e, targets) => {
      for (const { label } of targets) void qc.invalidateQueries({ queryKey: keys.tools(label) });
    },
  });
}

/** What a mutation's control says: saving, saved, or the API's sentence. */
export type SaveStatus = { kind: "idle" } | { kind: "saving" } | { kind: "saved" } | { kind: "error"; error: unknown };

export function saveStatus(m: { status: "idle" | "pending" | "success" | "error"; error: unknown }): SaveStatus {
  switch (m.status) {
    case "pending": return { kind: "saving" };
    case "success": return { kind: "saved" };
    case "error": return { kind: "error", error: m.error };
    default: return { kind: "idle" };
  }
}
