// The "Tools" control in the chat header: which servers and tools this
// conversation offers the model at all. A disclosure (button + panel) with a
// checkbox per server and per tool; each change is stored at once (PUT
// /api/conversations/{id}/tools) and applies from the next request on. In a
// new chat the first click creates the conversation, so the choice can be
// made before the first message.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTranslation } from "react-i18next";
import { api, ApiError } from "../api/client";
import { keys } from "../api/query";
import type { ConversationTools, ServerChoice, ToolSelection } from "../api/types";
import { useDisclosure } from "../useDisclosure";
import { useScoped } from "./useScoped";

/** How many of a server's tools the conversation offers (none while the server is off). */
export function selectedCount(s: ServerChoice): number {
  return s.enabled ? s.tools.filter((t) => t.selected).length : 0;
}

/** The selection after turning a server on or off; its tool choice is kept. */
export function toggleServer(ct: ConversationTools, label: string): ToolSelection {
  const servers = { ...ct.servers };
  const cur = servers[label];
  const choice = ct.available.find((s) => s.label === label);
  const enabled = !(choice?.enabled ?? cur?.enabled ?? true);
  servers[label] = { enabled, tools: cur?.tools ?? null };
  return { servers };
}

/** The selection after selecting or deselecting one tool; all selected again means "every tool" (null). */
export function toggleTool(ct: ConversationTools, label: string, tool: string): ToolSelection {
  const choice = ct.available.find((s) => s.label === label);
  const all = choice?.tools.map((t) => t.name) ?? [];
  const picked = new Set(choice?.tools.filter((t) => t.selected).map((t) => t.name) ?? []);
  if (picked.has(tool)) picked.delete(tool);
  else picked.add(tool);
  const tools = all.every((n) => picked.has(n)) ? null : all.filter((n) => picked.has(n));
  return { servers: { ...ct.servers, [label]: { enabled: true, tools } } };
}

/** ct with sel applied, as the server will answer: shown at once while the change is stored. */
export function withSelection(ct: ConversationTools, sel: ToolSelection): ConversationTools {
  const servers = sel.servers ?? {};
  return {
    servers,
    available: ct.available.map((s) => {
      const entry = servers[s.label];
      const list = entry?.tools ?? null;
      return {
        ...s,
        enabled: entry?.enabled ?? true,
        tools: s.tools.map((t) => ({ ...t, selected: list === null || list.includes(t.name) })),
      };
    }),
  };
}

export interface ToolsControlProps {
  conversationId: string | undefined;
  /** Creates the conversation (a new chat) and goes to it; returns its id. */
  onCreate(): Promise<string>;
}

export function ToolsControl({ conversationId, onCreate }: ToolsControlProps) {
  const { t } = useTranslation("chat");
  const qc = useQueryClient();
  const { open, setOpen, root, buttonProps, panelProps } = useDisclosure();
  const [creating, setCreating] = useState(false);
  const [error, setError] = useScoped<string | null>(conversationId, null);

  const tools = useQuery({
    queryKey: keys.conversationTools(conversationId ?? ""),
    queryFn: () => api.conversationTools(conversationId!),
    enabled: conversationId !== undefined,
  });
  const key = keys.conversationTools(conversationId ?? "");
  const save = useMutation({
    mutationFn: (sel: ToolSelection) => api.setConversationTools(conversationId!, sel),
    // The boxes follow the click at once; a refusal puts back what was stored.
    onMutate: (sel) => {
      setError(null);
      const before = qc.getQueryData<ConversationTools>(key);
      if (before) qc.setQueryData(key, withSelection(before, sel));
      return { before };
    },
    onSuccess: (ct) => {
      qc.setQueryData(key, ct);
      void qc.invalidateQueries({ queryKey: keys.conversation(conversationId!), exact: true });
    },
    onError: (e, _sel, ctx) => {
      if (ctx?.before) qc.setQueryData(key, ctx.before);
      setError(e instanceof ApiError ? e.message : String(e));
    },
  });

  const toggle = async () => {
    if (open) { setOpen(false); return; }
    if (conversationId === undefined) {
      setCreating(true);
      setError(null);
      try {
        await onCreate();
      } catch (e) {
        setError(e instanceof ApiError ? e.message : String(e));
        setCreating(false);
        return;
      }
      setCreating(false);
    }
    setOpen(true);
  };

  const ct = tools.data;
  const total = ct?.available.reduce((n, s) => n + s.tools.length, 0) ?? 0;
  const offered = ct?.available.reduce((n, s) => n + selectedCount(s), 0) ?? 0;
  const limited = ct !== undefined && (offered < total || ct.available.some((s) => !s.enabled));
  const busy = save.isPending;

  return (
    <div className="tools-control" ref={root}>
      <button type="button" {...buttonProps} className={limited ? "tools-limited" : undefined}
        disabled={creating} onClick={() => void toggle()}>
        {t("tools.button")}
        {ct && total > 0 && <span className="tools-count">{t("tools.count", { selected: offered, total })}</span>}
        <span aria-hidden="true"> ▾</span>
      </button>
      {error && !open && <p className="alert error tools-error" role="alert">{error}</p>}
      {open && (
        <div {...panelProps} className="tools-panel" role="group" aria-label={t("tools.label")}>
          <p className="tools-intro muted">{t("tools.intro")}</p>
          {error && <p className="alert error" role="alert">{error}</p>}
          {tools.isPending && <p className="muted">{t("tools.loading")}</p>}
          {tools.error && <p className="alert error" role="alert">{t("tools.loadError", { message: tools.error.message })}</p>}
          {ct && ct.available.length === 0 && <p className="muted">{t("tools.none")}</p>}
          {ct?.available.map((s) => (
            <fieldset key={s.label} className="tools-server">
              <legend>
                <label>
                  <input type="checkbox" checked={s.enabled} disabled={busy}
                    onChange={() => save.mutate(toggleServer(ct, s.label))} />
                  <span className="tools-server-name">{s.label}</span>
                </label>
                <span className="muted tools-server-count">
                  {s.offers_unknown && s.tools.length === 0
                    ? t("tools.allUnknown")
                    : t("tools.count", { selected: selectedCount(s), total: s.tools.length })}
                </span>
              </legend>
              {s.tools.length > 0 && (
                <ul>
                  {s.tools.map((tool) => (
                    <li key={tool.name}>
                      <label>
                        <input type="checkbox" checked={s.enabled && tool.selected} disabled={busy || !s.enabled}
                          onChange={() => save.mutate(toggleTool(ct, s.label, tool.name))} />
                        <code>{tool.name}</code>
                        {tool.policy === "always" && <span className="muted tools-asks">{t("tools.asks")}</span>}
                      </label>
                    </li>
                  ))}
                </ul>
              )}
            </fieldset>
          ))}
        </div>
      )}
    </div>
  );
}
