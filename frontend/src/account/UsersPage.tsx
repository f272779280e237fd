// Admins: the people who can sign in. Create an account, change a role,
// disable or enable it. The API's refusals (the last admin, a taken email)
// are shown next to what was tried.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { useTranslation } from "react-i18next";
import { api } from "../api/client";
import { keys } from "../api/query";
import type { Role, User } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { useMe } from "../auth/session";
import { useFormat } from "../i18n/format";
import "./account.css";

const usersQuery = { queryKey: keys.users, queryFn: () => api.listUsers() };

/** Puts the account the API answered with into the list, then reads the list again. */
function useUserSaved() {
  const client = useQueryClient();
  return (u: User) => {
    client.setQueryData<User[]>(keys.users, (us) => us && (us.some((x) => x.id === u.id) ? us.map((x) => (x.id === u.id ? u : x)) : [...us, u]));
    return client.invalidateQueries({ queryKey: keys.users });
  };
}

function RoleOptions() {
  const { t } = useTranslation("common");
  return (
    <>
      <option value="member">{t("role.member")}</option>
      <option value="admin">{t("role.admin")}</option>
    </>
  );
}

function NewUserForm() {
  const { t } = useTranslation("account");
  const errorText = useErrorText();
  const id = useId();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [role, setRole] = useState<Role>("member");
  const saved = useUserSaved();
  const create = useMutation({
    mutationFn: (u: { email: string; password: string; role: Role }) => api.createUser(u),
    onSuccess: (u) => {
      setEmail("");
      setPassword("");
      setRole("member");
      return saved(u);
    },
  });

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    create.mutate({ email: email.trim(), password, role });
  };

  return (
    <>
      <form className="account-form card" onSubmit={submit} aria-labelledby={`${id}-h`} noValidate>
        <h2 id={`${id}-h`}>{t("users.add.title")}</h2>
        <div className="account-form-row">
          <div className="account-field">
            <label htmlFor={`${id}-email`}>{t("users.email")}</label>
            <input id={`${id}-email`} type="email" autoComplete="off" value={email} onChange={(e) => setEmail(e.target.value)} />
          </div>
          <div className="account-field">
            <label htmlFor={`${id}-password`}>{t("users.password")}</label>
            <input id={`${id}-password`} type="password" autoComplete="new-password" value={password}
              onChange={(e) => setPassword(e.target.value)} />
          </div>
          <div className="account-field">
            <label htmlFor={`${id}-role`}>{t("users.role")}</label>
            <select id={`${id}-role`} value={role} onChange={(e) => setRole(e.target.value as Role)}>
              <RoleOptions />
            </select>
          </div>
          <button type="submit" className="primary" disabled={create.isPending || !email.trim() || !password}>
            {create.isPending ? t("users.add.adding") : t("users.add.submit")}
          </button>
        </div>
        {create.error && (
          <p className="alert error" role="alert">
            {t("users.add.failed", { email: create.variables?.email || t("users.add.thePerson"), error: errorText(create.error) })}
          </p>
        )}
      </form>
      <p className="page-notice" role="status">
        {create.data ? t("users.add.done", { email: create.data.email, role: t(`common:role.${create.data.role}`) }) : ""}
      </p>
    </>
  );
}

function UserRow({ user, self }: { user: User; self: boolean }) {
  const { t } = useTranslation("account");
  const errorText = useErrorText();
  const { dateTime } = useFormat();
  const saved = useUserSaved();
  const update = useMutation({
    mutationFn: (p: { role?: Role; disabled?: boolean }) => api.updateUser(user.id, p),
    onSuccess: saved,
  });
  // While a change is on its way the row shows it; the list follows once the API answered.
  const shown = update.isPending ? { ...user, ...update.variables } : user;
  return (
    <tr className={shown.disabled ? "is-disabled" : undefined}>
      <th scope="row">{user.email}{self && <span className="muted"> {t("users.you")}</span>}</th>
      <td>
        <select aria-label={t("users.roleOf", { email: user.email })} value={shown.role} disabled={update.isPending}
          onChange={(e) => update.mutate({ role: e.target.value as Role })}>
          <RoleOptions />
        </select>
      </td>
      <td data-label={t("users.status")}>{shown.disabled ? <span className="badge off">{t("users.disabled")}</span> : t("users.active")}</td>
      <td data-label={t("users.lastLogin")}>{user.last_login_at ? dateTime(user.last_login_at) : t("users.never")}</td>
      <td>
        <button type="button" className={shown.disabled ? undefined : "danger"} disabled={update.isPending}
          onClick={() => update.mutate({ disabled: !user.disabled })}>
          {t(user.disabled ? "users.enable" : "users.disable", { email: user.email })}
        </button>
        {update.error && <p className="alert error row-error" role="alert">{errorText(update.error)}</p>}
      </td>
    </tr>
  );
}

export function UsersPage() {
  const { t } = useTranslation("account");
  const errorText = useErrorText();
  const me = useMe();
  const users = useQuery(usersQuery);

  return (
    <div className="account-page">
      <header>
        <h1>{t("users.title")}</h1>
        <p className="muted">{t("users.intro")}</p>
      </header>
      {users.isError && (
        <div className="alert error" role="alert">
          {t("users.loadFailed", { error: errorText(users.error) })}{" "}
          <button type="button" className="link" onClick={() => void users.refetch()}>{t("common:app.tryAgain")}</button>
        </div>
      )}
      <NewUserForm />
      {users.isPending && <p className="muted">{t("common:app.loading")}</p>}
      {users.data && (
        <div className="table-scroll">
          <table className="account-table">
            <caption className="sr-only">{t("users.caption")}</caption>
            <thead>
              <tr>
                <th scope="col">{t("users.email")}</th><th scope="col">{t("users.role")}</th><th scope="col">{t("users.status")}</th>
                <th scope="col">{t("users.lastLogin")}</th><th scope="col">{t("users.actions")}</th>
              </tr>
            </thead>
            <tbody>
              {users.data.map((u) => <UserRow key={u.id} user={u} self={u.id === me?.id} />)}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
