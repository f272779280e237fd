// Changes to servers and to the global settings, as TanStack Query
// mutations over the caches of queries.ts. The switch, a default and its lock
// show at once (onMutate) and go back when refused (onError); whatever they
// move is read again afterwards (onSettled).
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api } from "../api/client";
import { keys } from "../api/query";
import type { NewServer, Server, ServerPatch, Settings } from "../api/types";
import { mapServers, settleTools, toolsChange } from "./queries";

/** What a server patch shows at once: the switch, the default and its lock, result masking. */
function optimisticServer(s: Server, p: ServerPatch): Server {
  return {
    ...s,
    ...(p.enabled != null && { enabled: p.enabled }),
    ...(p.default_policy !== undefined && { default_policy: p.default_policy }),
    ...(p.default_policy_locked != null && { default_policy_locked: p.default_policy_locked }),
    ...(p.mask_results != null && { mask_results: p.mask_results }),
  };
}

/**
 * Changes one server (PATCH). `what` names the control, so each has its own
 * pending state. Only the switch, the default and its lock, and result
 * masking are shown before the answer; a changed URL or header discovers
 * the tools again.
 */
export function useServerPatch(label: string, what: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationKey: [...toolsChange(label), "server", what],
    mutationFn: (p: ServerPatch) => api.updateServer(label, p),
    onMutate: async (p) => {
      await qc.cancelQueries({ queryKey: keys.servers, exact: true });
      const before = qc.getQueryData<Server[]>(keys.servers)?.find((s) => s.label === label);
      mapServers(qc, (ss) => ss.map((s) => (s.label === label ? optimisticServer(s, p) : s)));
      return { before };
    },
    onError: (_err, p, ctx) => {
      const b = ctx?.before;
      if (!b) return;
      const back: ServerPatch = {};
      if (p.enabled != null) back.enabled = b.enabled;
      if (p.default_policy !== undefined) back.default_policy = b.default_policy;
      if (p.default_policy_locked != null) back.default_policy_locked = b.default_policy_locked;
      if (p.mask_results != null) back.mask_results = b.mask_results !== false;
      mapServers(qc, (ss) => ss.map((s) => (s.label === label ? optimisticServer(s, back) : s)));
    },
    onSuccess: (saved) => mapServers(qc, (ss) => ss.map((s) => (s.label === label ? saved : s))),
    onSettled: (_s, _e, p) => {
      void qc.invalidateQueries({ queryKey: keys.servers, exact: true });
      // Neither the switch nor result masking changes what the tools are.
      const onlySwitch = Object.keys(p).every((k) => k === "enabled" || k === "mask_results");
      if (!onlySwitch) settleTools(qc, label);
    },
  });
}

export function useCreateServer() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (s: NewServer) => api.createServer(s),
    onSuccess: (saved) => mapServers(qc, (ss) =>
      [...ss.filter((s) => s.label !== saved.label), saved].sort((a, b) => a.label.localeCompare(b.label))),
    onSettled: () => qc.invalidateQueries({ queryKey: keys.servers, exact: true }),
  });
}

/** Discovers a server's tools again; a failed discovery is kept on the server (tools_refresh_error). */
export function useRefreshServer(label: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: () => api.refreshServer(label),
    onSuccess: (tools) => qc.setQueryData(keys.tools(label), tools),
    onSettled: () => qc.invalidateQueries({ queryKey: keys.servers, exact: true }),
  });
}

export function useDeleteServer(label: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: () => api.deleteServer(label),
    onSuccess: () => {
      mapServers(qc, (ss) => ss.filter((s) => s.label !== label));
      qc.removeQueries({ queryKey: keys.tools(label) });
    },
  });
}

/** The global default and its lock; every server's tools follow it. */
export function useSettingsMutation(what: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationKey: ["settings", what],
    mutationFn: (p: { default_policy?: Settings["default_policy"]; default_policy_locked?: boolean; ask_everything?: boolean }) => api.updateSettings(p),
    onMutate: async (p) => {
      await qc.cancelQueries({ queryKey: keys.settings });
      const before = qc.getQueryData<Settings>(keys.settings);
      qc.setQueryData<Settings>(keys.settings, (s) => s && { ...s, ...p });
      return { before };
    },
    onError: (_err, p, ctx) => {
      const b = ctx?.before;
      if (!b) return;
      qc.setQueryData<Settings>(keys.settings, (s) => s && {
        ...s,
        ...(p.default_policy !== undefined && { default_policy: b.default_policy }),
        ...(p.default_policy_locked !== undefined && { default_policy_locked: b.default_policy_locked }),
        ...(p.ask_everything !== undefined && { ask_everything: b.ask_everything }),
      });
    },
    onSuccess: (saved) => qc.setQueryData(keys.settings, saved),
    onSettled: () => {
      void qc.invalidateQueries({ queryKey: keys.settings });
      // The servers list and, below it, every server's tools.
      void qc.invalidateQueries({ queryKey: keys.servers });
    },
  });
}
