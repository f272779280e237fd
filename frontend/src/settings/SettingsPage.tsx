// Tools & policies: the global default, the registered MCP servers with
// their defaults and tools, search and filter, and bulk changes. Everything
// shown is TanStack Query's (queries.ts); every change is saved at once.
import { useQueries, useQuery } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { Trans, useTranslation } from "react-i18next";
import { useIsAdmin } from "../auth/session";
import { useErrorText } from "../auth/errorText";
import { linkProps } from "../router";
import { DecisionHookForm } from "./DecisionHookForm";
import type { ToolFilter } from "./filters";
import { GlobalDefault } from "./GlobalDefault";
import { RulesDisclosure } from "./RuleEditor";
import { serversQuery, settingsQuery, toolsQuery } from "./queries";
import { ServerForm } from "./ServerForm";
import { ServerSection } from "./ServerSection";
import { SettingsToolbar, type Notice } from "./SettingsToolbar";
import { useNow } from "./time";
import { useSettingsEvents } from "./useSettingsEvents";
import { WebhooksSection } from "./WebhooksSection";
import "./settings.css";

/** The page for a link (`/settings?server=…&tool=…`): a new link starts afresh, with no search hiding its tool. */
export function SettingsPage({ focusServer, focusTool }: { focusServer?: string; focusTool?: string }) {
  useSettingsEvents(); // changes made elsewhere show without a reload
  return <SettingsBody key={`${focusServer ?? ""}/${focusTool ?? ""}`} focusServer={focusServer} focusTool={focusTool} />;
}

function SettingsBody({ focusServer, focusTool }: { focusServer?: string; focusTool?: string }) {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const admin = useIsAdmin();
  const now = useNow();
  const servers = useQuery(serversQuery);
  const settings = useQuery(settingsQuery);
  const tools = useQueries({ queries: (servers.data ?? []).map((s) => toolsQuery(s.label)) });
  const [query, setQuery] = useState("");
  const [filter, setFilter] = useState<ToolFilter>("all");
  const [adding, setAdding] = useState(false);
  const [notice, setNotice] = useState<Notice | null>(null);
  // What to focus once it shows: the link's server or tool, or a server just added.
  const [focus, setFocus] = useState(focusServer ? { server: focusServer, tool: focusTool, pending: true } : null);
  const addBtn = useRef<HTMLButtonElement>(null);

  const loadError = servers.error ?? settings.error;
  const list = servers.data;
  const withTools = (list ?? []).map((s, i) => ({ label: s.label, tools: tools[i]?.data }));
  const focusTools = withTools.find((s) => s.label === focusServer)?.tools;
  const missingServer = list && focusServer && !list.some((s) => s.label === focusServer);
  const missingTool = focusTool && focusTools && !focusTools.some((x) => x.name === focusTool);
  const focused = () => setFocus((f) => f && { ...f, pending: false });
  const clearFilters = () => {
    setQuery("");
    setFilter("all");
  };

  return (
    <div className="settings">
      <header className="settings-header">
        <h1>{t("page.title")}</h1>
        <p className="muted">
          <Trans t={t} i18nKey="page.intro" components={{ b: <strong /> }} />{" "}
          <Trans t={t} i18nKey={admin ? "page.introAdmin" : "page.introMember"} components={{ b: <strong /> }} />{" "}
          <a {...linkProps({ page: "grants" })}>{t("grants.link")}</a>
        </p>
      </header>

      {loadError && (
        <div className="alert error" role="alert">
          {t("page.loadFailed", { message: errorText(loadError) })}{" "}
          <button type="button" className="link" onClick={() => { void servers.refetch(); void settings.refetch(); }}>
            {t("tryAgain")}
          </button>
        </div>
      )}

      {settings.data && <GlobalDefault settings={settings.data} admin={admin} />}
      {settings.data && (
        <div className="workspace-rules">
          <RulesDisclosure list={{}} name={t("rules.workspaceName")} admin={admin} />
        </div>
      )}
      {admin && <DecisionHookForm />}

      {(missingServer || missingTool) && (
        <div className="alert info" role="status">
          {missingServer
            ? <Trans t={t} i18nKey="page.missingServer" values={{ server: focusServer }} components={{ code: <code /> }} />
            : <Trans t={t} i18nKey="page.missingTool" values={{ server: focusServer, tool: focusTool }} components={{ code: <code /> }} />}
        </div>
      )}

      <div className="servers-head">
        <h2>{t("page.servers")}</h2>
        {/* While the form is open its own submit button is the one "Add server". */}
        {admin && !adding && (
          <button type="button" ref={addBtn} className="primary" onClick={() => setAdding(true)}>{t("page.addServer")}</button>
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
              setNotice(s.tools_refresh_error
                ? { text: t("page.addedDiscoveryFailed", { label: s.label, message: s.tools_refresh_error }), error: true }
                : { text: t("page.added", { label: s.label, count: s.tool_count }) });
              setFocus({ server: s.label, tool: undefined, pending: true });
            }}
          />
        </div>
      )}

      {list && list.length > 0 && (
        <SettingsToolbar servers={withTools} admin={admin} query={query} filter={filter}
          onQuery={setQuery} onFilter={setFilter} onNotice={setNotice} />
      )}

      <p className={`page-notice${notice?.error ? " status-error" : ""}`} role="status">{notice?.text ?? ""}</p>

      {servers.isPending && !loadError && <p className="muted">{t("page.loading")}</p>}

      {list && list.length === 0 && !adding && (
        <div className="empty-state">
          <p><strong>{t("page.empty")}</strong></p>
          {admin ? (
            <>
              <p className="muted">{t("page.emptyAdmin")}</p>
              <button type="button" className="primary" onClick={() => setAdding(true)}>{t("page.addFirst")}</button>
            </>
          ) : <p className="muted">{t("page.emptyMember")}</p>}
        </div>
      )}

      {list?.map((s) => (
        <ServerSection
          key={s.label}
          server={s}
          globalDefault={settings.data?.default_policy}
          admin={admin}
          query={query}
          filter={filter}
          now={now}
          focus={focus?.server === s.label ? focus : undefined}
          onFocused={focused}
          onDeleted={(label) => {
            setNotice({ text: t("page.deleted", { label }) });
            requestAnimationFrame(() => addBtn.current?.focus());
          }}
          onClearFilters={clearFilters}
        />
      ))}

      {admin && <WebhooksSection />}
    </div>
  );
}
