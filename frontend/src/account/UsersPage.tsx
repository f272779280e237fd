// Admins: the people who can sign in. Create an account, change a role,
// disable or enable it. The API's refusals (the last admin, a taken email)
// are shown next to what was tried.
import { useCallback, useEffect, useId, useState } from "react";
import { api } from "../api/client";
import type { Role, User } from "../api/types";
import { useMe } from "../auth/session";
import { errorMessage } from "../settings/policy";
import "./account.css";

function NewUserForm({ onCreated }: { onCreated(u: User): void }) {
  const id = useId();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [role, setRole] = useState<Role>("member");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const u = await api.createUser({ email: email.trim(), password, role });
      setEmail("");
      setPassword("");
      setRole("member");
      onCreated(u);
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="account-form card" onSubmit={submit} aria-labelledby={`${id}-h`} noValidate>
      <h2 id={`${id}-h`}>Add a person</h2>
      <div className="account-form-row">
        <div className="account-field">
          <label htmlFor={`${id}-email`}>Email</label>
          <input id={`${id}-email`} type="email" autoComplete="off" value={email} onChange={(e) => setEmail(e.target.value)} />
        </div>
        <div className="account-field">
          <label htmlFor={`${id}-password`}>Password</label>
          <input id={`${id}-password`} type="password" autoComplete="new-password" value={password}
            onChange={(e) => setPassword(e.target.value)} />
        </div>
        <div className="account-field">
          <label htmlFor={`${id}-role`}>Role</label>
          <select id={`${id}-role`} value={role} onChange={(e) => setRole(e.target.value as Role)}>
            <option value="member">Member</option>
            <option value="admin">Admin</option>
          </select>
        </div>
        <button type="submit" className="primary" disabled={busy || !email.trim() || !password}>
          {busy ? "Adding…" : "Add person"}
        </button>
      </div>
      {error && <p className="alert error" role="alert">Could not add {email.trim() || "the person"}: {error}</p>}
    </form>
  );
}

function UserRow({ user, self, onChanged }: { user: User; self: boolean; onChanged(u: User): void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const patch = async (p: { role?: Role; disabled?: boolean }) => {
    setBusy(true);
    setError(null);
    try {
      const u = await api.updateUser(user.id, p);
      onChanged(u && typeof u === "object" && "id" in u ? u : { ...user, ...p });
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <tr className={user.disabled ? "is-disabled" : undefined}>
      <th scope="row">{user.email}{self && <span className="muted"> (you)</span>}</th>
      <td>
        <select aria-label={`Role of ${user.email}`} value={user.role} disabled={busy}
          onChange={(e) => void patch({ role: e.target.value as Role })}>
          <option value="member">Member</option>
          <option value="admin">Admin</option>
        </select>
      </td>
      <td>{user.disabled ? <span className="badge off">disabled</span> : "active"}</td>
      <td>
        <button type="button" className={user.disabled ? undefined : "danger"} disabled={busy}
          onClick={() => void patch({ disabled: !user.disabled })}>
          {user.disabled ? `Enable ${user.email}` : `Disable ${user.email}`}
        </button>
        {error && <p className="alert error row-error" role="alert">{error}</p>}
      </td>
    </tr>
  );
}

export function UsersPage() {
  const me = useMe();
  const [users, setUsers] = useState<User[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [notice, setNotice] = useState("");

  const load = useCallback(async () => {
    setLoadError(null);
    try {
      setUsers(await api.listUsers());
    } catch (err) {
      setLoadError(errorMessage(err));
    }
  }, []);
  useEffect(() => { void load(); }, [load]);

  const replace = (u: User) => setUsers((us) => us && us.map((x) => (x.id === u.id ? u : x)));

  return (
    <div className="account-page">
      <header>
        <h1>Users</h1>
        <p className="muted">Admins manage servers, workspace policies and people; members chat, decide their own approvals and set their own policies.</p>
      </header>
      {loadError && (
        <div className="alert error" role="alert">
          Could not load the users: {loadError} <button type="button" className="link" onClick={() => void load()}>Try again</button>
        </div>
      )}
      <NewUserForm onCreated={(u) => {
        setUsers((us) => [...(us ?? []).filter((x) => x.id !== u.id), u]);
        setNotice(`Added ${u.email} as ${u.role}.`);
      }} />
      <p className="page-notice" role="status">{notice}</p>
      {users === null && !loadError && <p className="muted">Loading…</p>}
      {users && (
        <table className="account-table">
          <caption className="sr-only">People who can sign in</caption>
          <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Status</th><th scope="col">Actions</th></tr></thead>
          <tbody>
            {users.map((u) => <UserRow key={u.id} user={u} self={u.id === me?.id} onChanged={replace} />)}
          </tbody>
        </table>
      )}
    </div>
  );
}
