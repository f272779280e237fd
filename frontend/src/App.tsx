import { useCallback, useEffect, useState } from "react";
import { ApiError, api, onSignedOut } from "./api/client";
import type { Info, Me } from "./api/types";
import { UsersPage } from "./account/UsersPage";
import { TokensPage } from "./account/TokensPage";
import { LoginPage } from "./auth/LoginPage";
import { SetupPage } from "./auth/SetupPage";
import { UserMenu } from "./auth/UserMenu";
import { SessionContext } from "./auth/session";
import { ChatPage } from "./chat/ChatPage";
import { AuditPage } from "./settings/AuditPage";
import { SettingsPage } from "./settings/SettingsPage";
import { linkProps, navigate, safeNext, useRoute } from "./router";

/** undefined: asking /api/auth/me; null: signed out; else the person. */
type Session = Me | null | undefined;

const here = () => location.pathname + location.search;

export function App() {
  const route = useRoute();
  const [me, setMe] = useState<Session>(undefined);
  const [meError, setMeError] = useState<string | null>(null);
  const [expired, setExpired] = useState(false);

  const loadMe = useCallback(() => {
    setMeError(null);
    api.me().then(setMe, (err) => {
      if (err instanceof ApiError && err.status === 401) setMe(null);
      else setMeError(err instanceof Error ? err.message : String(err));
    });
  }, []);
  useEffect(loadMe, [loadMe]);

  // Any call answering 401 later: the session ended. Show the login page and
  // come back here afterwards.
  useEffect(() => onSignedOut(() => {
    setMe((cur) => {
      if (cur) setExpired(true);
      return null;
    });
  }), []);

  // Signed out anywhere but the login and setup pages: go to the login page, keeping the path.
  useEffect(() => {
    if (me === null && route.page !== "login" && route.page !== "setup") {
      navigate({ page: "login", next: safeNext(here()) }, { replace: true });
    }
  }, [me, route.page]);

  // Signed in already on the login or setup page (e.g. the back button): go where the person was going.
  const nextPath = route.page === "login" ? route.next ?? "/" : "/";
  useEffect(() => {
    if (me && (route.page === "login" || route.page === "setup")) navigate(nextPath, { replace: true });
  }, [me, route.page, nextPath]);

  const signedIn = (who: Me) => {
    setExpired(false);
    setMe(who);
    navigate(route.page === "login" ? route.next ?? "/" : "/", { replace: true });
  };

  if (route.page === "setup" && !me) return <SetupPage token={route.token} onSignedIn={signedIn} />;
  if (me === undefined) {
    return (
      <div className="app-loading">
        {meError ? (
          <p className="alert error" role="alert">
            Could not reach Toolgate: {meError} <button type="button" className="link" onClick={loadMe}>Try again</button>
          </p>
        ) : <p className="muted">Loading…</p>}
      </div>
    );
  }
  if (me === null) {
    return <LoginPage onSignedIn={signedIn} notice={expired ? "Your session ended: sign in again to go on." : undefined} />;
  }
  if (route.page === "login" || route.page === "setup") return null; // signed in already: the effect above moves on

  const signOut = async () => {
    try { await api.logout(); } catch { /* the session is gone either way */ }
    setExpired(false);
    setMe(null);
    navigate({ page: "login" }, { replace: true });
  };

  return (
    <SessionContext.Provider value={me}>
      <Shell me={me} onSignOut={signOut} />
    </SessionContext.Provider>
  );
}

function Shell({ me, onSignOut }: { me: Me; onSignOut(): Promise<void> }) {
  const route = useRoute();
  const [info, setInfo] = useState<Info | null>(null);
  useEffect(() => {
    api.info().then(setInfo, () => setInfo(null));
  }, []);
  const admin = me.role === "admin";

  return (
    <div className="app">
      <header className="topbar">
        <a className="brand" {...linkProps({ page: "chat" })}>Toolgate</a>
        <nav aria-label="Main">
          <a {...linkProps({ page: "chat" })} aria-current={route.page === "chat" ? "page" : undefined}>Chat</a>
          <a {...linkProps({ page: "settings" })} aria-current={route.page === "settings" ? "page" : undefined}>Tools &amp; policies</a>
          <a {...linkProps({ page: "audit" })} aria-current={route.page === "audit" ? "page" : undefined}>Audit log</a>
        </nav>
        {info && (
          <span className={info.offline ? "mode offline" : "mode"} title={info.offline ? "No OPENAI_API_KEY: answers come from the built-in emulator" : info.base_url}>
            {info.offline ? "Offline demo (emulated model)" : info.model}
          </span>
        )}
        <UserMenu me={me} onSignOut={onSignOut} />
      </header>
      <main className="content">
        {route.page === "chat" && <ChatPage conversationId={route.conversationId} />}
        {route.page === "settings" && <SettingsPage focusServer={route.server} focusTool={route.tool} />}
        {route.page === "audit" && <AuditPage />}
        {route.page === "tokens" && <TokensPage />}
        {route.page === "users" && (admin ? <UsersPage /> : (
          <div className="account-page"><p className="alert error" role="alert">Only admins manage users.</p></div>
        ))}
      </main>
    </div>
  );
}
