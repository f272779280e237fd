// First run: the one-time setup link (/setup?token=…) creates the first
// admin in the browser, then signs them in.
import { useId, useState } from "react";
import { api } from "../api/client";
import type { Me } from "../api/types";
import { errorMessage } from "../settings/policy";
import "./auth.css";

export function SetupPage({ token, onSignedIn }: { token?: string; onSignedIn(me: Me): void }) {
  const id = useId();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [again, setAgain] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const mismatch = again !== "" && again !== password;

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    if (busy || !token) return;
    if (password !== again) {
      setError("The two passwords differ: type the same password twice.");
      return;
    }
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await api.setup(token, email.trim(), password));
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };

  return (
    <div className="auth-page">
      <main className="auth-card" aria-labelledby={`${id}-h`}>
        <h1 id={`${id}-h`}>Set up Toolgate</h1>
        {!token ? (
          <p className="alert error" role="alert">
            This setup link has no token. Open the link Toolgate printed when it started (it ends in <code>?token=…</code>).
          </p>
        ) : (
          <>
            <p className="muted">Create the first administrator. They can add people, MCP servers and workspace policies.</p>
            <form onSubmit={submit} noValidate>
              <div className="auth-field">
                <label htmlFor={`${id}-email`}>Email</label>
                <input id={`${id}-email`} type="email" autoComplete="username" required value={email}
                  onChange={(e) => setEmail(e.target.value)} />
              </div>
              <div className="auth-field">
                <label htmlFor={`${id}-password`}>Password</label>
                <input id={`${id}-password`} type="password" autoComplete="new-password" required value={password}
                  onChange={(e) => setPassword(e.target.value)} />
              </div>
              <div className="auth-field">
                <label htmlFor={`${id}-again`}>Password again</label>
                <input id={`${id}-again`} type="password" autoComplete="new-password" required value={again}
                  aria-invalid={mismatch || undefined} aria-describedby={mismatch ? `${id}-again-err` : undefined}
                  onChange={(e) => setAgain(e.target.value)} />
                {mismatch && <p id={`${id}-again-err`} className="field-error">The passwords differ.</p>}
              </div>
              {error && <p className="alert error" role="alert">{error}</p>}
              <button type="submit" className="primary" disabled={busy || !email.trim() || !password || mismatch}>
                {busy ? "Creating…" : "Create admin and sign in"}
              </button>
            </form>
          </>
        )}
      </main>
    </div>
  );
}
