// The login page: email and password, the API's sentence when it refuses,
// a countdown when too many attempts were made (429 + Retry-After), and
// "Sign in with SSO" when the server uses OIDC.
import { useEffect, useId, useState } from "react";
import { ApiError, api, retryAfterOf } from "../api/client";
import type { AuthStatus, Me } from "../api/types";
import { errorMessage } from "../settings/policy";
import "./auth.css";
import { AuthField } from "./AuthField";

export interface LoginPageProps {
  /** Called with the person once signed in. */
  onSignedIn(me: Me): void;
  /** Why the login page is shown, e.g. the session expired. */
  notice?: string;
}

/** Seconds left of a Retry-After, ticking down once a second. */
function useCountdown(): [number, (s: number) => void] {
  const [left, setLeft] = useState(0);
  useEffect(() => {
    if (left <= 0) return;
    const t = setTimeout(() => setLeft((n) => n - 1), 1000);
    return () => clearTimeout(t);
  }, [left]);
  return [left, setLeft];
}

export function LoginPage({ onSignedIn, notice }: LoginPageProps) {
  const id = useId();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [wait, setWait] = useCountdown();
  const [status, setStatus] = useState<AuthStatus | null>(null);

  useEffect(() => {
    api.authStatus().then(setStatus, () => setStatus(null));
  }, []);

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    if (busy || wait > 0) return;
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await api.login(email.trim(), password));
    } catch (err) {
      setPassword("");
      if (err instanceof ApiError && err.status === 429) {
        const s = retryAfterOf(err) ?? 30;
        setWait(s);
        setError(null);
      } else {
        setError(errorMessage(err));
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="auth-page">
      <main className="auth-card" aria-labelledby={`${id}-h`}>
        <h1 id={`${id}-h`}>Sign in to Toolgate</h1>
        {notice && <p className="alert info" role="status">{notice}</p>}
        {status?.setup_required && (
          <p className="alert info">No account exists yet: open the one-time setup link Toolgate printed when it started.</p>
        )}
        {status?.sign_in_link && !status.setup_required && (
          <p className="alert info">
            Offline demo: open the sign-in link Toolgate printed in its terminal
            (<code>toolgate: sign in: http://…</code>). Each start prints a new one.
          </p>
        )}
        <form onSubmit={submit} noValidate>
          <AuthField id={`${id}-email`} label="Email" type="email" autoComplete="username" value={email} onChange={setEmail} />
          <AuthField id={`${id}-password`} label="Password" type="password" autoComplete="current-password"
            value={password} onChange={setPassword} />
          {error && <p className="alert error" role="alert">{error}</p>}
          {wait > 0 && <p className="alert error" role="alert">Too many attempts, try again in {wait} s.</p>}
          <button type="submit" className="primary" disabled={busy || wait > 0 || !email.trim() || !password}>
            {busy ? "Signing in…" : "Sign in"}
          </button>
        </form>
        {status?.oidc && (
          <div className="auth-sso">
            <span className="muted">or</span>
            <a className="button" href="/api/auth/oidc/login">Sign in with SSO</a>
          </div>
        )}
      </main>
    </div>
  );
}
