// One registered MCP server: its head, discovery status, the delete
// confirmation or edit form, its default policy and its tools.
import { useQuery } from "@tanstack/react-query";
import { useCallback, useRef, useState, type KeyboardEvent } from "react";
import { useTranslation } from "react-i18next";
import { ApiError } from "../api/client";
import type { DefaultPolicy, Server } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { DecisionHookForm } from "./DecisionHookForm";
import type { ToolFilter } from "./filters";
import { toolsQuery } from "./queries";
import { useDeleteServer, useRefreshServer, useServerPatch } from "./serverMutations";
import { RulesDisclosure } from "./RuleEditor";
import { ServerDefault } from "./ServerDefault";
import { ServerForm } from "./ServerForm";
import { ServerHeader } from "./ServerHeader";
import { HealthDetail } from "./ServerHealth";
import { MaskResults } from "./MaskResults";
import { ReadOnlyHints } from "./ReadOnlyHints";
import { ServerTools } from "./ServerTools";
import { RelativeTime } from "./time";

interface Props {
  server: Server;
  globalDefault: DefaultPolicy | undefined;
  /** Admins change servers, workspace policies and defaults; members see them and set their own policies. */
  admin: boolean;
  query: string;
  filter: ToolFilter;
  now: number;
  /** What the page's link (or a new server) asks to focus here: the server itself (tool undefined) or one tool. */
  focus?: { tool?: string; pending: boolean };
  onFocused: () => void;
  onDeleted: (label: string) => void;
  onClearFilters: () => void;
}

export function ServerSection({ server, globalDefault, admin, query, filter, now, focus, onFocused, onDeleted, onClearFilters }: Props) {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const label = server.label;
  const [mode, setMode] = useState<"view" | "edit" | "confirm-delete">("view");
  const tools = useQuery(toolsQuery(label));
  const refresh = useRefreshServer(label);
  const remove = useDeleteServer(label);
  const enabled = useServerPatch(label, "enabled");
  const editBtn = useRef<HTMLButtonElement>(null);
  const deleteBtn = useRef<HTMLButtonElement>(null);
  const busy = refresh.isPending || remove.isPending;
  // Focus starts on Cancel when the confirmation opens: deleting takes a deliberate second step.
  const focusOnOpen = useCallback((el: HTMLButtonElement | null) => el?.focus(), []);

  // The server itself is what the link names: scroll to it and focus its heading, once.
  const focusHeading = (el: HTMLHeadingElement | null) => {
    if (!el || !focus?.pending || focus.tool !== undefined) return;
    el.closest("section")?.scrollIntoView?.({ block: "start" });
    el.focus({ preventScroll: true });
    onFocused();
  };

  const list = tools.data ?? [];
  const undiscovered = list.filter((x) => !x.discovered).length;
  const explicit = list.filter((x) => x.policy !== null).length;
  // A failed discovery is kept on the server and shown in the status line; other failures here.
  const refreshError = refresh.error && !(refresh.error instanceof ApiError && refresh.error.code === "discovery_failed")
    ? t("server.refreshFailed", { message: errorText(refresh.error) }) : null;
  const actionError = refreshError ?? (remove.error ? t("server.deleteFailed", { label, message: errorText(remove.error) }) : null);

  const back = (btn: { current: HTMLButtonElement | null }) => requestAnimationFrame(() => btn.current?.focus());
  const cancelDelete = () => {
    setMode("view");
    back(deleteBtn);
  };
  const escape = (e: KeyboardEvent) => {
    if (e.key === "Escape" && !remove.isPending) cancelDelete();
  };

  return (
    <section aria-label={t("server.region", { label })} className={`server-card${server.enabled ? "" : " is-disabled"}`} id={`server-${label}`}>
      <ServerHeader server={server} admin={admin} headingRef={focusHeading} editRef={editBtn} deleteRef={deleteBtn}
        editing={mode === "edit"} confirming={mode === "confirm-delete"} busy={busy} refreshing={refresh.isPending}
        switching={enabled.isPending} onEnabled={(next) => enabled.mutate({ enabled: next })}
        onRefresh={() => refresh.mutate()} onEdit={() => setMode(mode === "edit" ? "view" : "edit")}
        onDelete={() => setMode("confirm-delete")} />

      <p className="server-status" role="status">
        {server.tools_refresh_error ? (
          <span className="status-error">
            {t("server.discoveryFailed")}
            {server.tools_refreshed_at && <> <RelativeTime iso={server.tools_refreshed_at} now={now} /></>}: {server.tools_refresh_error}
          </span>
        ) : server.tools_refreshed_at ? (
          <>
            {t("server.toolCount", { count: server.tool_count })}
            {undiscovered > 0 && <> {t("server.undiscovered", { count: undiscovered })}</>}
            {" · "}{t("server.refreshed")} <RelativeTime iso={server.tools_refreshed_at} now={now} />
          </>
        ) : t("server.notDiscoveredYet")}
        {enabled.isError && (
          <span className="status-error"> · {t(enabled.variables?.enabled ? "server.enableFailed" : "server.disableFailed",
            { label, message: errorText(enabled.error) })}</span>
        )}
        {!server.enabled && <span className="muted"> · {t("server.disabledNote")}</span>}
      </p>
      <HealthDetail health={server.health} now={now} />
      <ReadOnlyHints server={server} tools={list} admin={admin} />
      <MaskResults server={server} admin={admin} />
      {actionError && <div className="alert error" role="alert">{actionError}</div>}

      {mode === "confirm-delete" && (
        <div className="confirm-delete" role="group" aria-label={t("server.confirmDeleteLabel", { label })}>
          <p>
            <strong>{t("server.confirmDelete", { label })}</strong>{" "}
            {t("server.confirmDeleteTools", { count: list.length || server.tool_count })}
            {explicit > 0 && <> (<strong>{t("server.toolPolicies", { count: explicit })}</strong>)</>}.{" "}
            {t("server.confirmDeleteAfter")}
          </p>
          <div className="confirm-actions">
            <button type="button" className="danger solid" disabled={remove.isPending} onKeyDown={escape}
              onClick={() => remove.mutate(undefined, { onSuccess: () => onDeleted(label) })}>
              {remove.isPending ? t("server.deleting") : t("server.deleteServer")}
            </button>
            <button type="button" ref={focusOnOpen} onClick={cancelDelete} disabled={remove.isPending} onKeyDown={escape}>
              {t("form.cancel")}
            </button>
          </div>
        </div>
      )}

      {mode === "edit" && (
        <ServerForm server={server}
          onCancel={() => { setMode("view"); back(editBtn); }}
          onSaved={() => { setMode("view"); back(editBtn); }} />
      )}

      <ServerDefault server={server} admin={admin} globalDefault={globalDefault} />
      <div className="server-rules">
        <RulesDisclosure list={{ server: label }} name={t("rules.serverName", { label })} admin={admin} />
      </div>
      {admin && <DecisionHookForm label={label} />}
      <ServerTools server={server} admin={admin} globalDefault={globalDefault} query={query} filter={filter} now={now}
        focusTool={focus?.tool} focusPending={!!focus?.pending} onFocused={onFocused} onClearFilters={onClearFilters} />
    </section>
  );
}
