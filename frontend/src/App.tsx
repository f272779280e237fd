// The app: who is signed in (TanStack Query, keys.me) decides between the
// login page and the shell; the shell is the top bar and the page of the
// current route.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import { onSignedOut } from "./api/client";
import { infoQuery, keys } from "./api/query";
import type { Me } from "./api/types";
import { UsersPage } from "./account/UsersPage";
import { TokensPage } from "./account/TokensPage";
import { GrantsPage } from "./settings/GrantsPage";
import { LoginPage } from "./auth/LoginPage";
import { SetupPage } from "./auth/SetupPage";
import { LinkPage } from "./link/LinkPage";
import { UserMenu } from "./auth/UserMenu";
import { useErrorText } from "./auth/errorText";
import { SessionContext, meQuery } from "./auth/session";
import { ChatPage } from "./chat/ChatPage";
import { ApprovalStatsPage } from "./settings/ApprovalStatsPage";
import { AuditPage } from "./settings/AuditPage";
import { SettingsPage } from "./settings/SettingsPage";
import { InboxPage } from "./inbox/InboxPage";
import { useInboxEvents } from "./inbox/useInboxEvents";
import { inboxQuery } from "./api/query";
import { linkProps, navigate, safeNext, useRoute, type Route } from "./router";

// With the hash: a link to one card (a webhook's) still opens that card after signing in.
const here = () => location.pathname + location.search + location.hash;

export function App() {
  const { t } = useTranslation("common");
  const errorText = useErrorText();
  const route = useRoute();
  const client = useQueryClient();
  const session = useQuery(meQuery);
  const me = session.data;
  // Why the login page shows: the session ended under the person's feet (not a sign-out).
  const [expired, setExpired] = useState(false);

  // Any call answering 401 later: the session ended. Show the login page and
  // come back here afterwards.
  useEffect(() => onSignedOut(() => {
    if (client.getQueryData(keys.me)) setExpired(true);
    client.setQueryData(keys.me, null);
  }), [client]);

  // Signed out anywhere but the login and setup pages: go to the login page, keeping the path.
  useEffect(() => {
    if (me === null && route.page !== "login" && route.page !== "setup" && route.page !== "link") {
      navigate({ page: "login", next: safeNext(here()) }, { replace: true });
    }
  }, [me, route.page]);

  // Signed in already on the login or setup page (e.g. the back button): go where the person was going.
  const nextPath = route.page === "login" ? route.next ?? "/" : "/";
  useEffect(() => {
    if (me && (route.page === "login" || route.page === "setup")) navigate(nextPath, { replace: true });
  }, [me, route.page, nextPath]);

  // Signed in: the effect above goes where the person was going.
  const signedIn = () => setExpired(false);

  if (route.page === "setup" && !me) return <SetupPage token={route.token} onSignedIn={signedIn} />;
  // A signed link works without a session: the token decides as its person.
  if (route.page === "link") return <LinkPage approvalRequestId={route.approvalRequestId} token={route.token} />;
  if (me === undefined) {
    return (
      <div className="app-loading">
        {session.isError ? (
          <p className="alert error" role="alert">
            {t("app.unreachable", { error: errorText(session.error) })}{" "}
            <button type="button" className="link" onClick={() => void session.refetch()}>{t("app.tryAgain")}</button>
          </p>
        ) : <p className="muted">{t("app.loading")}</p>}
      </div>
    );
  }
  if (me === null) return <LoginPage onSignedIn={signedIn} notice={expired ? t("app.sessionEnded") : undefined} />;
  if (route.page === "login" || route.page === "setup") return null; // signed in already: the effect above moves on

  return (
    <SessionContext.Provider value={me}>
      <Shell me={me} route={route} />
    </SessionContext.Provider>
  );
}

function ModePill() {
  const { t } = useTranslation("common");
  const { data: info } = useQuery(infoQuery);
  if (!info) return null;
  return (
    <span className={info.offline ? "mode offline" : "mode"} title={info.offline ? t("shell.offlineHint") : info.base_url}>
      {info.offline ? (
        <>
          <span className="mode-full">{t("shell.offline")}</span>
          <span className="mode-short">{t("shell.offlineShort")}</span>
        </>
      ) : info.model}
    </span>
  );
}

type ShellRoute = Exclude<Route, { page: "login" | "setup" }>;

/** The nav's link to "Waiting for me", with how many requests wait (live: useInboxEvents). */
function InboxLink({ current }: { current: "page" | undefined }) {
  const { t } = useTranslation("common");
  const { data } = useQuery(inboxQuery);
  const count = data?.length ?? 0;
  return (
    <a {...linkProps({ page: "inbox" })} aria-current={current} className="nav-inbox">
      {/* On a phone only the tray and the count show; the name stays for screen readers. */}
      <svg className="nav-icon" aria-hidden="true" viewBox="0 0 16 16" width="15" height="15">
        <path fill="currentColor" d="M3.2 2h9.6l2.2 6.6V14H1V8.6L3.2 2Zm1.1 1.5L2.6 8h3.1l1 1.5h2.6l1-1.5h3.1l-1.7-4.5H4.3Z" />
      </svg>
      <span className="nav-label">{t("shell.inbox")}</span>
      {count > 0 && <span className="count-badge"><span aria-hidden="true">{count}</span><span className="sr-only">{t("shell.inboxCount", { count })}</span></span>}
    </a>
  );
}

function Shell({ me, route }: { me: Me; route: ShellRoute }) {
  const { t } = useTranslation("common");
  const current = (page: Route["page"]) => (route.page === page ? "page" : undefined);
  useInboxEvents();
  return (
    <div className="app">
      <header className="topbar">
        <a className="brand" {...linkProps({ page: "chat" })}>Toolgate</a>
        <nav aria-label={t("shell.nav")}>
          <a {...linkProps({ page: "chat" })} aria-current={current("chat")}>{t("shell.chat")}</a>
          <InboxLink current={current("inbox")} />
          <a {...linkProps({ page: "settings" })} aria-current={current("settings")}>{t("shell.settings")}</a>
          <a {...linkProps({ page: "audit" })} aria-current={current("audit")}>{t("shell.audit")}</a>
        </nav>
        <div className="topbar-end">
          <ModePill />
        </div>
        <UserMenu me={me} />
      </header>
      <main className="content">
        {route.page === "chat" && <ChatPage conversationId={route.conversationId} linkedApproval={route.approval} />}
        {route.page === "settings" && <SettingsPage focusServer={route.server} focusTool={route.tool} />}
        {route.page === "audit" && <AuditPage />}
        {route.page === "inbox" && <InboxPage />}
        {route.page === "approvalStats" && (me.role === "admin" ? <ApprovalStatsPage /> : (
          <div className="account-page"><p className="alert error" role="alert">{t("shell.adminsOnlyStats")}</p></div>
        ))}
        {route.page === "tokens" && <TokensPage />}
        {route.page === "grants" && <GrantsPage />}
        {route.page === "users" && (me.role === "admin" ? <UsersPage /> : (
          <div className="account-page"><p className="alert error" role="alert">{t("shell.adminsOnly")}</p></div>
        ))}
      </main>
    </div>
  );
}
