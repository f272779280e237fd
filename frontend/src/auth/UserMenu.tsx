// The user menu in the top bar: who is signed in, their pages, the language,
// sign out. A disclosure (button + panel), closed by Escape or a click
// elsewhere.
import { useId } from "react";
import { useTranslation } from "react-i18next";
import type { Me } from "../api/types";
import { languages } from "../i18n";
import { linkProps, navigate } from "../router";
import { useDisclosure } from "../useDisclosure";
import { useSignOut } from "./session";

function LanguageSelect() {
  const { t, i18n } = useTranslation("common");
  const id = useId();
  return (
    <div className="user-language">
      <label htmlFor={id}>{t("menu.language")}</label>
      <select id={id} value={i18n.resolvedLanguage ?? "en"} onChange={(e) => void i18n.changeLanguage(e.target.value)}>
        {languages.map((l) => <option key={l.code} value={l.code} lang={l.code}>{l.name}</option>)}
      </select>
    </div>
  );
}

export function UserMenu({ me }: { me: Me }) {
  const { t } = useTranslation("common");
  const { open, setOpen, root, buttonProps, panelProps } = useDisclosure();
  const signOut = useSignOut(() => navigate({ page: "login" }, { replace: true }));

  const link = (to: Parameters<typeof linkProps>[0]) => {
    const p = linkProps(to);
    return { href: p.href, onClick: (e: React.MouseEvent) => { p.onClick(e); setOpen(false); } };
  };

  return (
    <div className="user-menu" ref={root}>
      <button type="button" {...buttonProps}
        aria-label={t("menu.account", { email: me.email })} onClick={() => setOpen(!open)}>
        <span className="user-initial" aria-hidden="true">{me.email.charAt(0).toUpperCase()}</span>
        <span className="user-email">{me.email}</span> <span aria-hidden="true">▾</span>
      </button>
      {open && (
        <div {...panelProps} className="user-menu-panel">
          <p className="user-who">
            <strong>{me.email}</strong>
            <span className={`badge role-${me.role}`}>{t(`menu.roleBadge.${me.role}`)}</span>
          </p>
          <ul>
            <li><a {...link({ page: "tokens" })}>{t("menu.tokens")}</a></li>
            <li><a {...link({ page: "grants" })}>{t("menu.grants")}</a></li>
            {me.role === "admin" && <li><a {...link({ page: "users" })}>{t("menu.users")}</a></li>}
            {me.role === "admin" && <li><a {...link({ page: "approvalStats" })}>{t("menu.approvals")}</a></li>}
            <li><LanguageSelect /></li>
            <li>
              <button type="button" disabled={signOut.isPending} onClick={() => signOut.mutate()}>
                {signOut.isPending ? t("menu.signingOut") : t("menu.signOut")}
              </button>
            </li>
          </ul>
        </div>
      )}
    </div>
  );
}
