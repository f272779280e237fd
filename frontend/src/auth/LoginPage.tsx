// The login page: email and password, the API's sentence when it refuses,
// a countdown when too many attempts were made (429 + Retry-After), and
// "Sign in with SSO" when the server uses OIDC.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useId, useState } from "react";
import { Trans, useTranslation } from "react-i18next";
import { ApiError, api, retryAfterOf } from "../api/client";
import type { Me } from "../api/types";
import "./auth.css";
import { AuthField } from "./AuthField";
import { useErrorText } from "./errorText";
import { authStatusQuery, setSignedIn } from "./session";

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
  const { t } = useTranslation("common");
  const errorText = useErrorText();
  const id = useId();
  const client = useQueryClient();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [wait, setWait] = useCountdown();
  const { data: status } = useQuery(authStatusQuery);

  const login = useMutation({
    mutationFn: (v: { email: string; password: string }) => api.login(v.email, v.password),
    onSuccess: (me) => {
      setSignedIn(client, me);
      onSignedIn(me);
    },
    onError: (err) => {
      setPassword("");
      if (err instanceof ApiError && err.status === 429) setWait(retryAfterOf(err) ?? 30);
    },
  });
  // A 429 shows as the countdown, not as a sentence.
  const error = login.error && !(login.error instanceof ApiError && login.error.status === 429) ? login.error : null;

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    if (login.isPending || wait > 0) return;
    login.mutate({ email: email.trim(), password });
  };

  return (
    <div className="auth-page">
      <main className="auth-card" aria-labelledby={`${id}-h`}>
        <h1 id={`${id}-h`}>{t("login.title")}</h1>
        {notice && <p className="alert info" role="status">{notice}</p>}
        {status?.setup_required && <p className="alert info">{t("login.setupRequired")}</p>}
        {status?.sign_in_link && !status.setup_required && (
          <p className="alert info">
            <Trans t={t} i18nKey="login.signInLink" components={{ code: <code /> }} />
          </p>
        )}
        <form onSubmit={submit} noValidate>
          <AuthField id={`${id}-email`} label={t("auth.email")} type="email" autoComplete="username" value={email} onChange={setEmail} />
          <AuthField id={`${id}-password`} label={t("auth.password")} type="password" autoComplete="current-password"
            value={password} onChange={setPassword} />
          {error && <p className="alert error" role="alert">{errorText(error)}</p>}
          {wait > 0 && <p className="alert error" role="alert">{t("login.tooMany", { seconds: wait })}</p>}
          <button type="submit" className="primary" disabled={login.isPending || wait > 0 || !email.trim() || !password}>
            {login.isPending ? t("login.signingIn") : t("login.submit")}
          </button>
        </form>
        {status?.oidc && (
          <div className="auth-sso">
            <span className="muted">{t("login.or")}</span>
            <a className="button" href="/api/auth/oidc/login">{t("login.sso")}</a>
          </div>
        )}
      </main>
    </div>
  );
}
