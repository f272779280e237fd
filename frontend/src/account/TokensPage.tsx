// Personal API tokens, for curl and scripts (Authorization: Bearer …). A new
// token's secret is shown once, right after creating it, from the answer to
// the create call: it never goes into the query cache, whose list only has
// names and dates. Deleting asks first.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useId, useRef, useState } from "react";
import { Trans, useTranslation } from "react-i18next";
import { api } from "../api/client";
import { keys } from "../api/query";
import type { ApiToken, NewApiToken } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { useFormat } from "../i18n/format";
import { AgentSnippets } from "./AgentSnippets";
import "./account.css";

function NewToken({ token, onDone }: { token: NewApiToken; onDone(): void }) {
  const { t } = useTranslation("account");
  const [copied, setCopied] = useState<"" | "copied" | "failed">("");
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => { ref.current?.focus(); }, []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(token.token);
      setCopied("copied");
    } catch {
      setCopied("failed");
    }
  };
  return (
    <div className="new-token" role="region" aria-label={t("tokens.new.label", { name: token.name })} tabIndex={-1} ref={ref}>
      <p><Trans t={t} i18nKey="tokens.new.warning" values={{ name: token.name }} components={{ strong: <strong /> }} /></p>
      <div className="new-token-value">
        <code aria-label={t("tokens.new.token")}>{token.token}</code>
        <button type="button" onClick={copy}>{t("tokens.new.copy")}</button>
        <span role="status">{copied && t(`tokens.new.${copied}`)}</span>
      </div>
      <p className="muted small"><Trans t={t} i18nKey="tokens.new.usage" components={{ code: <code /> }} /></p>
      <button type="button" onClick={onDone}>{t("tokens.new.done")}</button>
    </div>
  );
}

function TokenRow({ token, onDeleted }: { token: ApiToken; onDeleted(id: string): void }) {
  const { t } = useTranslation("account");
  const errorText = useErrorText();
  const { dateTime } = useFormat();
  const client = useQueryClient();
  const [confirm, setConfirm] = useState(false);
  const remove = useMutation({
    mutationFn: () => api.deleteToken(token.id),
    onSuccess: () => {
      onDeleted(token.id);
      client.setQueryData<ApiToken[]>(keys.tokens, (ts) => ts?.filter((x) => x.id !== token.id));
      return client.invalidateQueries({ queryKey: keys.tokens });
    },
  });
  const date = (iso: string | null) => (iso ? dateTime(iso) : t("tokens.never"));
  return (
    <tr>
      <th scope="row">{token.name}</th>
      <td data-label={t("tokens.created")}>{date(token.created_at)}</td>
      <td data-label={t("tokens.lastUsed")}>{date(token.last_used_at)}</td>
      <td>
        {confirm ? (
          <span role="group" aria-label={t("tokens.delete.confirmLabel", { name: token.name })} className="confirm-inline">
            <span>{t("tokens.delete.consequence")}</span>{" "}
            <button type="button" className="danger solid" disabled={remove.isPending} onClick={() => remove.mutate()}>
              {remove.isPending ? t("tokens.delete.deleting") : t("tokens.delete.confirm")}
            </button>{" "}
            <button type="button" disabled={remove.isPending} onClick={() => setConfirm(false)}>{t("tokens.delete.cancel")}</button>
          </span>
        ) : (
          <button type="button" className="danger" onClick={() => setConfirm(true)}>{t("tokens.delete.button", { name: token.name })}</button>
        )}
        {remove.error && <p className="alert error row-error" role="alert">{errorText(remove.error)}</p>}
      </td>
    </tr>
  );
}

function TokenTable({ tokens, onDeleted }: { tokens: ApiToken[]; onDeleted(id: string): void }) {
  const { t } = useTranslation("account");
  if (tokens.length === 0) return <p className="muted">{t("tokens.none")}</p>;
  return (
    <div className="table-scroll">
      <table className="account-table">
        <caption className="sr-only">{t("tokens.caption")}</caption>
        <thead>
          <tr>
            <th scope="col">{t("tokens.name")}</th><th scope="col">{t("tokens.created")}</th>
            <th scope="col">{t("tokens.lastUsed")}</th><th scope="col">{t("tokens.actions")}</th>
          </tr>
        </thead>
        <tbody>
          {tokens.map((tok) => <TokenRow key={tok.id} token={tok} onDeleted={onDeleted} />)}
        </tbody>
      </table>
    </div>
  );
}

export function TokensPage() {
  const { t } = useTranslation("account");
  const errorText = useErrorText();
  const id = useId();
  const client = useQueryClient();
  const [name, setName] = useState("");
  const tokens = useQuery({ queryKey: keys.tokens, queryFn: () => api.listTokens() });
  const create = useMutation({
    mutationFn: (n: string) => api.createToken(n),
    // The secret lives in this mutation's answer only: dropped as soon as the page lets go of it.
    gcTime: 0,
    onSuccess: (tok) => {
      setName("");
      const listed: ApiToken = { id: tok.id, name: tok.name, created_at: tok.created_at, last_used_at: null };
      client.setQueryData<ApiToken[]>(keys.tokens, (ts) => ts && [...ts.filter((x) => x.id !== tok.id), listed]);
      void client.invalidateQueries({ queryKey: keys.tokens });
    },
  });

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    create.mutate(name.trim());
  };

  return (
    <div className="account-page">
      <header>
        <h1>{t("tokens.title")}</h1>
        <p className="muted">{t("tokens.intro")}</p>
      </header>
      {tokens.isError && (
        <div className="alert error" role="alert">
          {t("tokens.loadFailed", { error: errorText(tokens.error) })}{" "}
          <button type="button" className="link" onClick={() => void tokens.refetch()}>{t("common:app.tryAgain")}</button>
        </div>
      )}
      <form className="account-form card" onSubmit={submit} aria-labelledby={`${id}-h`}>
        <h2 id={`${id}-h`}>{t("tokens.create.title")}</h2>
        <div className="account-form-row">
          <div className="account-field">
            <label htmlFor={`${id}-name`}>{t("tokens.create.name")}</label>
            <input id={`${id}-name`} value={name} maxLength={100} placeholder={t("tokens.create.placeholder")}
              onChange={(e) => setName(e.target.value)} />
          </div>
          <button type="submit" className="primary" disabled={create.isPending || !name.trim()}>
            {create.isPending ? t("tokens.create.creating") : t("tokens.create.submit")}
          </button>
        </div>
        {create.error && <p className="alert error" role="alert">{t("tokens.create.failed", { error: errorText(create.error) })}</p>}
      </form>
      {create.data && <NewToken token={create.data} onDone={() => create.reset()} />}
      {tokens.isPending && <p className="muted">{t("common:app.loading")}</p>}
      {tokens.data && (
        <TokenTable tokens={tokens.data} onDeleted={(tid) => { if (create.data?.id === tid) create.reset(); }} />
      )}
      <AgentSnippets />
    </div>
  );
}
