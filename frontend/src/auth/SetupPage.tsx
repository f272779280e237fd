// First run: the one-time setup link (/setup?token=…) creates the first
// admin in the browser, then signs them in.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { Trans, useTranslation } from "react-i18next";
import { api } from "../api/client";
import type { Me } from "../api/types";
import "./auth.css";
import { AuthField } from "./AuthField";
import { useErrorText } from "./errorText";
import { setSignedIn } from "./session";

export function SetupPage({ token, onSignedIn }: { token?: string; onSignedIn(me: Me): void }) {
  const { t } = useTranslation("common");
  const errorText = useErrorText();
  const id = useId();
  const client = useQueryClient();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [again, setAgain] = useState("");
  const mismatch = again !== "" && again !== password;

  const setup = useMutation({
    mutationFn: (v: { token: string; email: string; password: string }) => api.setup(v.token, v.email, v.password),
    onSuccess: (me) => {
      setSignedIn(client, me);
      onSignedIn(me);
    },
  });

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    if (setup.isPending || !token || mismatch || password !== again) return;
    setup.mutate({ token, email: email.trim(), password });
  };

  return (
    <div className="auth-page">
      <main className="auth-card" aria-labelledby={`${id}-h`}>
        <h1 id={`${id}-h`}>{t("setup.title")}</h1>
        {!token ? (
          <p className="alert error" role="alert">
            <Trans t={t} i18nKey="setup.noToken" components={{ code: <code /> }} />
          </p>
        ) : (
          <>
            <p className="muted">{t("setup.intro")}</p>
            <form onSubmit={submit} noValidate>
              <AuthField id={`${id}-email`} label={t("auth.email")} type="email" autoComplete="username" value={email} onChange={setEmail} />
              <AuthField id={`${id}-password`} label={t("auth.password")} type="password" autoComplete="new-password"
                value={password} onChange={setPassword} />
              <AuthField id={`${id}-again`} label={t("setup.again")} type="password" autoComplete="new-password"
                value={again} onChange={setAgain} error={mismatch ? t("setup.mismatch") : undefined} />
              {setup.error && <p className="alert error" role="alert">{errorText(setup.error)}</p>}
              <button type="submit" className="primary" disabled={setup.isPending || setup.isSuccess || !email.trim() || !password || password !== again}>
                {setup.isPending ? t("setup.creating") : t("setup.submit")}
              </button>
            </form>
          </>
        )}
      </main>
    </div>
  );
}
