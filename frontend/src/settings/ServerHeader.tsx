// A server's head: label, URL, description and (masked) headers; for admins
// the enabled switch and the Refresh, Edit and Delete buttons.
import type { Ref } from "react";
import { useTranslation } from "react-i18next";
import type { Server } from "../api/types";
import { HealthBadge } from "./ServerHealth";

interface Props {
  server: Server;
  admin: boolean;
  headingRef: Ref<HTMLHeadingElement>;
  editRef: Ref<HTMLButtonElement>;
  deleteRef: Ref<HTMLButtonElement>;
  editing: boolean;
  confirming: boolean;
  /** A refresh or delete is in flight: the buttons wait. */
  busy: boolean;
  refreshing: boolean;
  /** The switch's save is in flight. */
  switching: boolean;
  onEnabled: (next: boolean) => void;
  onRefresh: () => void;
  onEdit: () => void;
  onDelete: () => void;
}

export function ServerHeader({
  server, admin, headingRef, editRef, deleteRef, editing, confirming, busy, refreshing, switching, onEnabled, onRefresh, onEdit, onDelete,
}: Props) {
  const { t } = useTranslation("settings");
  const headers = Object.entries(server.headers);
  return (
    <header className="server-head">
      <div className="server-ident">
        <div className="server-title-line">
          <h3 ref={headingRef} tabIndex={-1}>{server.label}</h3>
          <HealthBadge health={server.health} />
          {!server.enabled && <span className="badge off">{t("server.disabledBadge")}</span>}
        </div>
        <div className="server-url" title={server.url}>{server.url}</div>
        {server.description && <p className="server-desc">{server.description}</p>}
        {server.approval_ttl_seconds != null && (
          <p className="server-ttl muted">
            {server.approval_ttl_seconds === 0
              ? t("server.ttlNever")
              : t("server.ttl", { count: Math.round((server.approval_ttl_seconds / 60) * 100) / 100 })}
          </p>
        )}
        {headers.length > 0 && (
          <p className="server-headers">
            <span className="muted">{t("server.headers")} </span>
            {headers.map(([k, v]) => (
              <span key={k} className="header-chip">
                <code>{k}</code> <span className="masked" aria-label={t("server.valueHidden")}>{v}</span>
              </span>
            ))}
          </p>
        )}
      </div>
      {admin && (
        <div className="server-actions">
          <label className="switch" title={t("server.enabledTitle")}>
            <input type="checkbox" role="switch" checked={server.enabled} disabled={switching}
              onChange={(e) => onEnabled(e.target.checked)} />
            <span className="switch-track" aria-hidden="true"><span className="switch-thumb" /></span>
            <span>{t("server.enabled")}</span>
          </label>
          <button type="button" onClick={onRefresh} disabled={busy}>
            {refreshing ? t("server.refreshing") : t("server.refresh")}
          </button>
          <button type="button" ref={editRef} aria-expanded={editing} onClick={onEdit} disabled={busy}>
            {t("server.edit")}
          </button>
          {!confirming && (
            <button type="button" ref={deleteRef} className="danger" onClick={onDelete} disabled={busy}>
              {t("server.delete")}
            </button>
          )}
        </div>
      )}
    </header>
  );
}
