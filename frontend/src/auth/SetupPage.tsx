// First run: the one-time setup link (/setup?token=…) creates the first
// admin in the browser, then signs them in.
import { useId, useState } from "react";
import { api } from "../api/client";
import type { Me } from "../api/types";
import { errorMessage } from "../settings/policy";
import "./auth.css";
import { AuthField } from "./AuthField";

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
              <AuthField id={`${id}-email`} label="Email" type="email" autoComplete="username" value={email} onChange={setEmail} />
              <AuthField id={`${id}-password`} label="Password" type="password" autoComplete="new-password"
                value={password} onChange={setPassword} />
              <AuthField id={`${id}-again`} label="Password again" type="password" autoComplete="new-password"
                value={again} onChange={setAgain} error={mismatch ? "The passwords differ." : undefined} />
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
