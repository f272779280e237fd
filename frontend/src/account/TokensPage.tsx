// Personal API tokens, for curl and scripts (Authorization: Bearer …). A new
// token's secret is shown once, right after creating it; the list only has
// names and dates. Deleting asks first.
import { useCallback, useEffect, useId, useRef, useState } from "react";
import { api } from "../api/client";
import type { ApiToken, NewApiToken } from "../api/types";
import { errorMessage } from "../settings/policy";
import "./account.css";

function NewToken({ token, onDone }: { token: NewApiToken; onDone(): void }) {
  const [copied, setCopied] = useState<string>("");
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => { ref.current?.focus(); }, []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(token.token);
      setCopied("Copied.");
    } catch {
      setCopied("Could not copy: select the token and copy it by hand.");
    }
  };
  return (
    <div className="new-token" role="region" aria-label={`New token ${token.name}`} tabIndex={-1} ref={ref}>
      <p><strong>Copy the token {token.name} now: it is shown only this once.</strong> Toolgate stores only a hash of it; if you lose it, delete it and create another.</p>
      <div className="new-token-value">
        <code aria-label="Token">{token.token}</code>
        <button type="button" onClick={copy}>Copy</button>
        <span role="status">{copied}</span>
      </div>
      <p className="muted small">Use it as <code>Authorization: Bearer …</code>.</p>
      <button type="button" onClick={onDone}>I have copied it</button>
    </div>
  );
}

function TokenRow({ token, onDeleted }: { token: ApiToken; onDeleted(id: string): void }) {
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const remove = async () => {
    setBusy(true);
    setError(null);
    try {
      await api.deleteToken(token.id);
      onDeleted(token.id);
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };
  const date = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : "never");
  return (
    <tr>
      <th scope="row">{token.name}</th>
      <td>{date(token.created_at)}</td>
      <td>{date(token.last_used_at)}</td>
      <td>
        {confirm ? (
          <span role="group" aria-label={`Confirm deleting ${token.name}`} className="confirm-inline">
            <span>Scripts using it stop working.</span>{" "}
            <button type="button" className="danger solid" disabled={busy} onClick={remove}>{busy ? "Deleting…" : "Delete"}</button>{" "}
            <button type="button" disabled={busy} onClick={() => setConfirm(false)}>Cancel</button>
          </span>
        ) : (
          <button type="button" className="danger" onClick={() => setConfirm(true)}>Delete {token.name}</button>
        )}
        {error && <p className="alert error row-error" role="alert">{error}</p>}
      </td>
    </tr>
  );
}

export function TokensPage() {
  const id = useId();
  const [tokens, setTokens] = useState<ApiToken[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [created, setCreated] = useState<NewApiToken | null>(null);

  const load = useCallback(async () => {
    setLoadError(null);
    try {
      setTokens(await api.listTokens());
    } catch (err) {
      setLoadError(errorMessage(err));
    }
  }, []);
  useEffect(() => { void load(); }, [load]);

  const create = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const t = await api.createToken(name.trim());
      setCreated(t);
      setName("");
      setTokens((ts) => [...(ts ?? []), { id: t.id, name: t.name, created_at: t.created_at, last_used_at: null }]);
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="account-page">
      <header>
        <h1>API tokens</h1>
        <p className="muted">Personal tokens act as you from curl and scripts. They can do what you can do in the app.</p>
      </header>
      {loadError && (
        <div className="alert error" role="alert">
          Could not load your tokens: {loadError} <button type="button" className="link" onClick={() => void load()}>Try again</button>
        </div>
      )}
      <form className="account-form card" onSubmit={create} aria-labelledby={`${id}-h`}>
        <h2 id={`${id}-h`}>Create a token</h2>
        <div className="account-form-row">
          <div className="account-field">
            <label htmlFor={`${id}-name`}>Token name</label>
            <input id={`${id}-name`} value={name} maxLength={100} placeholder="e.g. laptop curl"
              onChange={(e) => setName(e.target.value)} />
          </div>
          <button type="submit" className="primary" disabled={busy || !name.trim()}>{busy ? "Creating…" : "Create token"}</button>
        </div>
        {error && <p className="alert error" role="alert">Could not create the token: {error}</p>}
      </form>
      {created && <NewToken token={created} onDone={() => setCreated(null)} />}
      {tokens === null && !loadError && <p className="muted">Loading…</p>}
      {tokens && tokens.length === 0 && <p className="muted">You have no tokens.</p>}
      {tokens && tokens.length > 0 && (
        <table className="account-table">
          <caption className="sr-only">Your API tokens</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead>
          <tbody>
            {tokens.map((t) => (
              <TokenRow key={t.id} token={t} onDeleted={(tid) => {
                setTokens((ts) => ts && ts.filter((x) => x.id !== tid));
                if (created?.id === tid) setCreated(null);
              }} />
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
