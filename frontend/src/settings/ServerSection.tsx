// One registered MCP server: its details, discovery status, actions, default
// policy and tools, each tool with its own policy control.
import { useEffect, useRef, useState } from "react";
import { ApiError, api } from "../api/client";
import type { DefaultPolicy, Server, Tool } from "../api/types";
import { LockIcon, LockToggle } from "./LockToggle";
import { PolicyControl } from "./PolicyControl";
import { ServerForm } from "./ServerForm";
import { DEFAULT_POLICIES, errorMessage, isDestructive, policyLabel } from "./policy";
import { ToolRow } from "./ToolRow";
import { RelativeTime } from "./time";

export type ToolsState =
  | { status: "loading" }
  | { status: "ready"; tools: Tool[] }
  | { status: "error"; message: string };

export type ToolFilter = "all" | "always" | "never" | "blocked" | "destructive";

export function toolMatches(t: Tool, query: string, filter: ToolFilter): boolean {
  if (filter === "destructive" ? !isDestructive(t.annotations) : filter !== "all" && t.effective_policy !== filter) return false;
  const q = query.trim().toLowerCase();
  if (!q) return true;
  return [t.name, t.title ?? "", t.annotations?.title ?? "", t.description].some((s) => s.toLowerCase().includes(q));
}

/** The destructive tools "Ask for all destructive tools" changes: not already Ask, and never unblocks. */
export function destructiveTargets(tools: Tool[]): Tool[] {
  return tools.filter((t) => isDestructive(t.annotations) && t.policy !== "always" && t.effective_policy !== "blocked");
}

export { rowId } from "./ToolRow";

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

interface Props {
  server: Server;
  tools: ToolsState | undefined;
  globalDefault: DefaultPolicy | undefined;
  /** Admins change servers, workspace policies and defaults; members see them and set their own policies. */
  admin?: boolean;
  query: string;
  filter: ToolFilter;
  now: number;
  focusTool?: string;
  /** True once per focus request: the caller scrolls to and focuses it. */
  claimFocus: (key: string) => boolean;
  onServerChanged: (s: Server) => void;
  onToolsChanged: (label: string, tools: Tool[]) => void;
  onToolChanged: (t: Tool) => void;
  reloadTools: (label: string) => Promise<void>;
  reloadServer: (label: string) => Promise<void>;
  onDeleted: (label: string) => void;
  onClearFilters: () => void;
}

export function ServerSection(p: Props) {
  const { server, tools } = p;
  const admin = p.admin ?? true;
  const label = server.label;
  const [mode, setMode] = useState<"view" | "edit" | "confirm-delete">("view");
  const [busy, setBusy] = useState<null | "refresh" | "delete" | "bulk">(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const [bulkMsg, setBulkMsg] = useState<{ text: string; error?: boolean } | null>(null);
  // The enabled switch is optimistic: it shows the pending value while saving.
  const [pendingEnabled, setPendingEnabled] = useState<boolean | null>(null);
  const [enabledError, setEnabledError] = useState<string | null>(null);
  const enabledShown = pendingEnabled ?? server.enabled;
  const editBtn = useRef<HTMLButtonElement>(null);
  const deleteBtn = useRef<HTMLButtonElement>(null);
  const cancelDeleteBtn = useRef<HTMLButtonElement>(null);
  const headingRef = useRef<HTMLHeadingElement>(null);
  const sectionRef = useRef<HTMLElement>(null);

  // Focus the server itself when the link names only the server.
  useEffect(() => {
    if (p.focusTool === undefined && p.claimFocus(`${label}/`)) {
      sectionRef.current?.scrollIntoView?.({ block: "start" });
      headingRef.current?.focus({ preventScroll: true });
    }
  }, [p.focusTool, label]);

  useEffect(() => {
    if (mode === "confirm-delete") cancelDeleteBtn.current?.focus();
  }, [mode]);

  const list = tools?.status === "ready" ? tools.tools : [];
  const shown = list.filter((t) => toolMatches(t, p.query, p.filter));
  const undiscovered = list.filter((t) => !t.discovered).length;
  const explicitPolicies = list.filter((t) => t.policy !== null).length;
  const filtering = p.query.trim() !== "" || p.filter !== "all";

  const refresh = async () => {
    setBusy("refresh");
    setActionError(null);
    try {
      const ts = await api.refreshServer(label);
      p.onToolsChanged(label, ts);
    } catch (err) {
      // A failed discovery is stored on the server (tools_refresh_error) and
      // shown in the status line; other failures are shown here.
      if (!(err instanceof ApiError && err.code === "discovery_failed")) {
        setActionError(`Could not refresh tools: ${errorMessage(err)}`);
      }
    } finally {
      await p.reloadServer(label).catch(() => undefined);
      setBusy(null);
    }
  };

  const toggleEnabled = async (next: boolean) => {
    setPendingEnabled(next);
    setEnabledError(null);
    try {
      const s = await api.updateServer(label, { enabled: next });
      p.onServerChanged(s);
    } catch (err) {
      setEnabledError(`Could not ${next ? "enable" : "disable"} ${label}: ${errorMessage(err)}`);
    } finally {
      setPendingEnabled(null);
    }
  };

  const remove = async () => {
    setBusy("delete");
    setActionError(null);
    try {
      await api.deleteServer(label);
      p.onDeleted(label);
    } catch (err) {
      setBusy(null);
      setActionError(`Could not delete ${label}: ${errorMessage(err)}`);
    }
  };

  const cancelDelete = () => {
    setMode("view");
    requestAnimationFrame(() => deleteBtn.current?.focus());
  };

  const askForDestructive = async () => {
    if (tools?.status !== "ready") return;
    const targets = destructiveTargets(tools.tools);
    const destructive = tools.tools.filter((t) => isDestructive(t.annotations));
    if (targets.length === 0) {
      setBulkMsg({
        text: destructive.length === 0
          ? `${label} has no tools marked destructive.`
          : `Nothing to change: every destructive tool of ${label} already asks or is blocked.`,
      });
      return;
    }
    setBusy("bulk");
    setBulkMsg(null);
    try {
      const ts = await api.setPolicies(label, Object.fromEntries(targets.map((t) => [t.name, "always" as const])));
      p.onToolsChanged(label, ts);
      const blocked = destructive.filter((t) => t.effective_policy === "blocked").length;
      setBulkMsg({
        text: `${plural(targets.length, "destructive tool")} set to Ask: ${targets.map((t) => t.name).join(", ")}.` +
          (blocked ? ` ${plural(blocked, "blocked tool")} left blocked.` : ""),
      });
    } catch (err) {
      setBulkMsg({ text: `Nothing was changed: ${errorMessage(err)}`, error: true });
    } finally {
      setBusy(null);
    }
  };

  const setServerDefault = async (next: DefaultPolicy | null) => {
    const s = await api.updateServer(label, { default_policy: next });
    p.onServerChanged(s);
    await p.reloadTools(label).catch(() => undefined);
  };

  const lockServerDefault = async (locked: boolean) => {
    const s = await api.updateServer(label, { default_policy_locked: locked });
    p.onServerChanged(s);
    await p.reloadTools(label).catch(() => undefined);
  };


  return (
    <section
      ref={sectionRef}
      aria-label={`Server ${label}`}
      className={`server-card${enabledShown ? "" : " is-disabled"}`}
      id={`server-${label}`}
    >
      <header className="server-head">
        <div className="server-ident">
          <div className="server-title-line">
            <h3 ref={headingRef} tabIndex={-1}>{label}</h3>
            {!enabledShown && <span className="badge off">disabled</span>}
          </div>
          <div className="server-url" title={server.url}>{server.url}</div>
          {server.description && <p className="server-desc">{server.description}</p>}
          {Object.keys(server.headers).length > 0 && (
            <p className="server-headers">
              <span className="muted">Headers: </span>
              {Object.entries(server.headers).map(([k, v]) => (
                <span key={k} className="header-chip"><code>{k}</code> <span className="masked" aria-label="value hidden">{v}</span></span>
              ))}
            </p>
          )}
        </div>
        {admin && <div className="server-actions">
          <label className="switch" title="Disabled servers are not offered to the model">
            <input
              type="checkbox"
              role="switch"
              checked={enabledShown}
              disabled={pendingEnabled !== null}
              onChange={(e) => void toggleEnabled(e.target.checked)}
            />
            <span className="switch-track" aria-hidden="true"><span className="switch-thumb" /></span>
            <span>Enabled</span>
          </label>
          <button type="button" onClick={refresh} disabled={busy !== null}>
            {busy === "refresh" ? "Refreshing…" : "Refresh tools"}
          </button>
          <button
            type="button"
            ref={editBtn}
            aria-expanded={mode === "edit"}
            onClick={() => setMode(mode === "edit" ? "view" : "edit")}
            disabled={busy !== null}
          >
            Edit
          </button>
          {mode !== "confirm-delete" && (
            <button type="button" ref={deleteBtn} className="danger" onClick={() => setMode("confirm-delete")} disabled={busy !== null}>
              Delete
            </button>
          )}
        </div>}
      </header>

      <p className="server-status" role="status">
        {server.tools_refresh_error ? (
          <span className="status-error">
            Tool discovery failed{server.tools_refreshed_at && <> <RelativeTime iso={server.tools_refreshed_at} now={p.now} /></>}: {server.tools_refresh_error}
          </span>
        ) : server.tools_refreshed_at ? (
          <>
            {plural(server.tool_count, "tool")}
            {undiscovered > 0 && <> (+{undiscovered} not discovered)</>}
            {" · "}refreshed <RelativeTime iso={server.tools_refreshed_at} now={p.now} />
          </>
        ) : (
          <>Tools not discovered yet</>
        )}
        {enabledError && <span className="status-error"> · {enabledError}</span>}
        {!enabledShown && <span className="muted"> · Its tools are not offered to the model while it is disabled.</span>}
      </p>
      {actionError && <div className="alert error" role="alert">{actionError}</div>}

      {mode === "confirm-delete" && (
        <div
          className="confirm-delete"
          role="group"
          aria-label={`Confirm deleting ${label}`}
          onKeyDown={(e) => {
            if (e.key === "Escape" && busy !== "delete") cancelDelete();
          }}
        >
          <p>
            <strong>Delete server {label}?</strong>{" "}
            This removes its {plural(list.length || server.tool_count, "tool")} and every policy set for them
            {explicitPolicies > 0 && <> (<strong>{plural(explicitPolicies, "tool policy", "tool policies")}</strong>)</>}.{" "}
            Registering it again starts without policies. The audit log keeps a record.
          </p>
          <div className="confirm-actions">
            <button type="button" className="danger solid" onClick={remove} disabled={busy === "delete"}>
              {busy === "delete" ? "Deleting…" : "Delete server"}
            </button>
            <button
              type="button"
              ref={cancelDeleteBtn}
              onClick={cancelDelete}
              disabled={busy === "delete"}
            >
              Cancel
            </button>
          </div>
        </div>
      )}

      {mode === "edit" && (
        <ServerForm
          server={server}
          onCancel={() => {
            setMode("view");
            requestAnimationFrame(() => editBtn.current?.focus());
          }}
          onSaved={(s) => {
            p.onServerChanged(s);
            setMode("view");
            void p.reloadTools(label).catch(() => undefined);
            requestAnimationFrame(() => editBtn.current?.focus());
          }}
        />
      )}

      <div className="server-default">
        <div className="server-default-text">
          <span className="setting-name">Server default</span>
          <span className="muted small">For this server's tools without a policy of their own.</span>
        </div>
        {admin ? (
          <div className="default-controls">
            <PolicyControl<DefaultPolicy>
              label={`Default for server ${label}`}
              value={server.default_policy}
              choices={DEFAULT_POLICIES}
              inherit={{ label: "Use global default", detail: p.globalDefault ? `(${policyLabel(p.globalDefault)})` : undefined }}
              onChange={setServerDefault}
            />
            <LockToggle label={`Lock the default for server ${label}`} locked={!!server.default_policy_locked}
              disabled={!server.default_policy && !server.default_policy_locked}
              disabledWhy="Choose a server default to lock it" onChange={lockServerDefault} />
          </div>
        ) : (
          <p className="readonly-setting">
            <strong>{server.default_policy ? policyLabel(server.default_policy) : `Global default (${policyLabel(p.globalDefault)})`}</strong>
            {server.default_policy_locked && <span className="lock-note"><LockIcon /> locked by an admin</span>}
          </p>
        )}
      </div>

      <div className="tools-head">
        <h4>Tools</h4>
        {tools?.status === "ready" && filtering && (
          <span className="muted small">showing {shown.length} of {list.length}</span>
        )}
        {admin && <div className="tools-head-actions">
          <button
            type="button"
            onClick={askForDestructive}
            disabled={busy !== null || tools?.status !== "ready"}
            title="Set every tool the server marks destructive to Ask (blocked tools stay blocked)"
          >
            {busy === "bulk" ? "Setting…" : "Ask for all destructive tools"}
          </button>
        </div>}
      </div>
      <p className={`bulk-status${bulkMsg?.error ? " status-error" : ""}`} role="status">{bulkMsg?.text ?? ""}</p>

      {tools === undefined || tools.status === "loading" ? (
        <p className="muted tools-empty">Loading tools…</p>
      ) : tools.status === "error" ? (
        <div className="alert error tools-empty" role="alert">
          Could not load the tools: {tools.message}{" "}
          <button type="button" className="link" onClick={() => void p.reloadTools(label).catch(() => undefined)}>Try again</button>
        </div>
      ) : list.length === 0 ? (
        <p className="muted tools-empty">
          {server.tools_refresh_error
            ? "No tools: discovery failed. Fix the URL or headers with Edit, or refresh tools once the server is reachable."
            : admin ? "This server lists no tools. Refresh tools after adding some to the server." : "This server lists no tools."}
        </p>
      ) : shown.length === 0 ? (
        <p className="muted tools-empty">
          No tools of {label} match.{" "}
          <button type="button" className="link" onClick={p.onClearFilters}>Clear search and filter</button>
        </p>
      ) : (
        <ul className="sp-tool-list" aria-label={`Tools of ${label}`}>
          {shown.map((t) => (
            <ToolRow
              key={t.name}
              tool={t}
              server={server}
              globalDefault={p.globalDefault}
              admin={admin}
              now={p.now}
              highlight={p.focusTool === t.name}
              claimFocus={p.claimFocus}
              onToolChanged={p.onToolChanged}
              reload={() => p.reloadTools(label)}
            />
          ))}
        </ul>
      )}
    </section>
  );
}
