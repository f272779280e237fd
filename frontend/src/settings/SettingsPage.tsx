// Tools & policies: the global default, the registered MCP servers with
// their defaults and tools, search and filter, and bulk changes. Everything
// shown comes from the API on mount; every change is saved at once.
import { useCallback, useEffect, useRef, useState } from "react";
import { api } from "../api/client";
import type { DefaultPolicy, Server, Settings, Tool } from "../api/types";
import { useIsAdmin } from "../auth/session";
import { LockIcon, LockToggle } from "./LockToggle";
import { PolicyControl } from "./PolicyControl";
import { ServerForm } from "./ServerForm";
import { destructiveTargets, ServerSection, toolMatches, type ToolFilter, type ToolsState } from "./ServerSection";
import { DEFAULT_POLICIES, errorMessage, policyHint, policyLabel } from "./policy";
import { useNow } from "./time";
import "./settings.css";

const FILTERS: { value: ToolFilter; label: string }[] = [
  { value: "all", label: "All" },
  { value: "always", label: "Ask" },
  { value: "never", label: "Auto" },
  { value: "blocked", label: "Blocked" },
  { value: "destructive", label: "Destructive" },
];

export function SettingsPage({ focusServer, focusTool }: { focusServer?: string; focusTool?: string }) {
  const [servers, setServers] = useState<Server[] | null>(null);
  const [settings, setSettings] = useState<Settings | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [tools, setTools] = useState<Record<string, ToolsState>>({});
  const [query, setQuery] = useState("");
  const [filter, setFilter] = useState<ToolFilter>("all");
  const [adding, setAdding] = useState(false);
  const [notice, setNotice] = useState<{ text: string; error?: boolean } | null>(null);
  const [bulkAll, setBulkAll] = useState(false);
  const now = useNow();
  const admin = useIsAdmin();
  const addBtn = useRef<HTMLButtonElement>(null);
  const toolsSeq = useRef<Record<string, number>>({});

  const loadTools = useCallback(async (label: string) => {
    const seq = (toolsSeq.current[label] ?? 0) + 1;
    toolsSeq.current[label] = seq;
    setTools((m) => (m[label]?.status === "ready" ? m : { ...m, [label]: { status: "loading" } }));
    try {
      const ts = await api.listTools(label);
      if (toolsSeq.current[label] === seq) setTools((m) => ({ ...m, [label]: { status: "ready", tools: ts } }));
    } catch (err) {
      if (toolsSeq.current[label] === seq) {
        setTools((m) => (m[label]?.status === "ready" ? m : { ...m, [label]: { status: "error", message: errorMessage(err) } }));
      }
      throw err;
    }
  }, []);

  const load = useCallback(async () => {
    setLoadError(null);
    try {
      const [ss, st] = await Promise.all([api.listServers(), api.settings()]);
      setServers(ss);
      setSettings(st);
      for (const s of ss) void loadTools(s.label).catch(() => undefined);
    } catch (err) {
      setLoadError(errorMessage(err));
    }
  }, [loadTools]);

  useEffect(() => {
    void load();
  }, [load]);

  // Focus requests: each (server, tool) of the route is focused once. Reset
  // while rendering, so rows rendered for a new route can claim it.
  const focusKey = `${focusServer ?? ""}/${focusTool ?? ""}`;
  const claimed = useRef({ key: focusKey, done: new Set<string>() });
  if (claimed.current.key !== focusKey) claimed.current = { key: focusKey, done: new Set() };
  const claimFocus = useCallback((key: string) => {
    if (claimed.current.done.has(key)) return false;
    claimed.current.done.add(key);
    return true;
  }, []);

  // Make sure the tool asked for is visible, whatever the search says.
  useEffect(() => {
    if (focusTool) {
      setQuery("");
      setFilter("all");
    }
  }, [focusServer, focusTool]);

  const replaceServer = (s: Server) =>
    setServers((ss) => ss && ss.map((x) => (x.label === s.label ? s : x)));

  const reloadServer = async (label: string) => {
    const ss = await api.listServers();
    const s = ss.find((x) => x.label === label);
    if (s) replaceServer(s);
  };

  const setToolsOf = (label: string, ts: Tool[]) => {
    toolsSeq.current[label] = (toolsSeq.current[label] ?? 0) + 1; // drop older loads
    setTools((m) => ({ ...m, [label]: { status: "ready", tools: ts } }));
  };

  const replaceTool = (t: Tool) =>
    setTools((m) => {
      const cur = m[t.server_id];
      if (cur?.status !== "ready") return m;
      return { ...m, [t.server_id]: { status: "ready", tools: cur.tools.map((x) => (x.name === t.name ? t : x)) } };
    });

  const setGlobalDefault = async (next: DefaultPolicy | null) => {
    if (!next) return;
    const st = await api.updateSettings({ default_policy: next });
    setSettings(st);
    for (const s of servers ?? []) void loadTools(s.label).catch(() => undefined);
  };

  const lockGlobalDefault = async (locked: boolean) => {
    const st = await api.updateSettings({ default_policy_locked: locked });
    setSettings(st);
    for (const s of servers ?? []) void loadTools(s.label).catch(() => undefined);
  };

  const askForDestructiveEverywhere = async () => {
    if (!servers) return;
    setBulkAll(true);
    setNotice(null);
    const changed: string[] = [];
    const failed: string[] = [];
    for (const s of servers) {
      const st = tools[s.label];
      if (st?.status !== "ready") continue;
      const targets = destructiveTargets(st.tools);
      if (!targets.length) continue;
      try {
        const ts = await api.setPolicies(s.label, Object.fromEntries(targets.map((t) => [t.name, "always" as const])));
        setToolsOf(s.label, ts);
        changed.push(...targets.map((t) => `${s.label}/${t.name}`));
      } catch (err) {
        failed.push(`${s.label}: ${errorMessage(err)}`);
      }
    }
    setBulkAll(false);
    const parts: string[] = [];
    parts.push(changed.length
      ? `${changed.length} destructive ${changed.length === 1 ? "tool" : "tools"} set to Ask: ${changed.join(", ")}.`
      : failed.length ? "" : "Nothing to change: every destructive tool already asks or is blocked.");
    if (failed.length) parts.push(`Not changed on ${failed.join("; ")}`);
    setNotice({ text: parts.filter(Boolean).join(" "), error: failed.length > 0 });
  };

  const totalTools = Object.values(tools).reduce((n, t) => n + (t.status === "ready" ? t.tools.length : 0), 0);
  const matching = Object.values(tools).reduce(
    (n, t) => n + (t.status === "ready" ? t.tools.filter((x) => toolMatches(x, query, filter)).length : 0), 0);
  const filtering = query.trim() !== "" || filter !== "all";
  const missingServer = servers && focusServer && !servers.some((s) => s.label === focusServer);
  const focusTools = focusServer ? tools[focusServer] : undefined;
  const missingTool = focusTool && focusTools?.status === "ready" && !focusTools.tools.some((t) => t.name === focusTool);

  return (
    <div className="settings">
      <header className="settings-header">
        <h1>Tools &amp; policies</h1>
        <p className="muted">
          Decide which MCP tools the model may run on its own. <strong>Auto</strong> runs without asking,{" "}
          <strong>Ask</strong> asks you first, <strong>Blocked</strong> is never offered to the model.
          A tool without its own policy uses its server's default, else the global default.
          {admin
            ? <> <strong>Workspace</strong> policies apply to everyone; a locked one cannot be loosened by anyone's own policy.</>
            : <> Admins set the <strong>workspace</strong> policies; <strong>mine</strong> is yours alone and can be stricter, or looser unless the workspace policy is locked.</>}
        </p>
      </header>

      {loadError && (
        <div className="alert error" role="alert">
          Could not load the settings: {loadError}{" "}
          <button type="button" className="link" onClick={() => void load()}>Try again</button>
        </div>
      )}

      {settings && (
        <section className="global-default" aria-labelledby="global-default-h">
          <div className="global-default-text">
            <h2 id="global-default-h">Global default</h2>
            <p className="muted small">For tools with no policy of their own on servers without a default. Now: {policyLabel(settings.default_policy)} — {policyHint(settings.default_policy).toLowerCase()}.</p>
          </div>
          {admin ? (
            <div className="default-controls">
              <PolicyControl<DefaultPolicy> label="Global default" value={settings.default_policy} onChange={setGlobalDefault}
                choices={DEFAULT_POLICIES} recommended="ask_unless_read_only" />
              <LockToggle label="Lock the global default" locked={!!settings.default_policy_locked} onChange={lockGlobalDefault} />
            </div>
          ) : (
            <p className="readonly-setting">
              <strong>{policyLabel(settings.default_policy)}</strong>
              {settings.default_policy_locked && <span className="lock-note"><LockIcon /> locked by an admin</span>}
            </p>
          )}
        </section>
      )}

      {(missingServer || missingTool) && (
        <div className="alert info" role="status">
          {missingServer
            ? <>There is no MCP server named <code>{focusServer}</code> any more.</>
            : <><code>{focusServer}</code> lists no tool named <code>{focusTool}</code>. Refresh its tools if the server added it recently.</>}
        </div>
      )}

      <div className="servers-head">
        <h2>MCP servers</h2>
        {/* While the form is open its own submit button is the one "Add server". */}
        {admin && !adding && (
          <button type="button" ref={addBtn} className="primary" onClick={() => setAdding(true)}>
            Add server
          </button>
        )}
      </div>

      {adding && (
        <div className="add-server card">
          <ServerForm
            onCancel={() => {
              setAdding(false);
              requestAnimationFrame(() => addBtn.current?.focus());
            }}
            onSaved={(s) => {
              setAdding(false);
              setServers((ss) => [...(ss ?? []).filter((x) => x.label !== s.label), s].sort((a, b) => a.label.localeCompare(b.label)));
              void loadTools(s.label).catch(() => undefined);
              setNotice({
                text: s.tools_refresh_error
                  ? `Added ${s.label}, but its tools could not be discovered: ${s.tools_refresh_error}`
                  : `Added ${s.label} with ${s.tool_count} ${s.tool_count === 1 ? "tool" : "tools"}.`,
                error: !!s.tools_refresh_error,
              });
              requestAnimationFrame(() => {
                const el = document.getElementById(`server-${s.label}`);
                el?.scrollIntoView?.({ block: "start" });
                el?.querySelector<HTMLElement>("h3")?.focus({ preventScroll: true });
              });
            }}
          />
        </div>
      )}

      {servers && servers.length > 0 && (
        <div className="toolbar" role="search" aria-label="Tools">
          <div className="toolbar-field grow">
            <label htmlFor="settings-search">Search tools</label>
            <input
              id="settings-search"
              type="search"
              value={query}
              onChange={(e) => setQuery(e.target.value)}
              placeholder="Name, title or description"
            />
          </div>
          <div className="toolbar-field">
            <label htmlFor="settings-show">Show</label>
            <select id="settings-show" value={filter} onChange={(e) => setFilter(e.target.value as ToolFilter)}>
              {FILTERS.map((f) => <option key={f.value} value={f.value}>{f.label}</option>)}
            </select>
          </div>
          <span className="toolbar-count muted small" aria-live="polite">
            {filtering ? `${matching} of ${totalTools} tools match` : ""}
          </span>
          {admin && servers.length > 1 && (
            <button type="button" onClick={askForDestructiveEverywhere} disabled={bulkAll}>
              {bulkAll ? "Setting…" : "Ask for destructive tools on every server"}
            </button>
          )}
        </div>
      )}

      <p className={`page-notice${notice?.error ? " status-error" : ""}`} role="status">{notice?.text ?? ""}</p>

      {servers === null && !loadError && <p className="muted">Loading…</p>}

      {servers && servers.length === 0 && !adding && (
        <div className="empty-state">
          <p><strong>No MCP servers yet — add one to give the model tools.</strong></p>
          {admin ? (
            <>
              <p className="muted">Register an MCP server by its streamable HTTP URL; Toolgate lists its tools so you can choose what runs without asking.</p>
              <button type="button" className="primary" onClick={() => setAdding(true)}>Add your first server</button>
            </>
          ) : <p className="muted">An admin registers MCP servers; their tools then show here.</p>}
        </div>
      )}

      {servers?.map((s) => (
        <ServerSection
          key={s.label}
          server={s}
          tools={tools[s.label]}
          globalDefault={settings?.default_policy}
          admin={admin}
          query={query}
          filter={filter}
          now={now}
          focusTool={focusServer === s.label ? focusTool : undefined}
          claimFocus={focusServer === s.label ? claimFocus : neverClaim}
          onServerChanged={replaceServer}
          onToolsChanged={setToolsOf}
          onToolChanged={replaceTool}
          reloadTools={loadTools}
          reloadServer={reloadServer}
          onDeleted={(label) => {
            setServers((ss) => ss && ss.filter((x) => x.label !== label));
            setTools((m) => {
              const { [label]: _, ...rest } = m;
              return rest;
            });
            setNotice({ text: `Deleted server ${label} with its tools and policies.` });
            requestAnimationFrame(() => addBtn.current?.focus());
          }}
          onClearFilters={() => {
            setQuery("");
            setFilter("all");
          }}
        />
      ))}
    </div>
  );
}

const neverClaim = () => false;
