// The confirmation an admin sees before approving wider from a card: what
// changes (a workspace default becomes Auto, for everyone), what keeps its
// own (tools with their own policy, locks at Ask, blocks, the "ask for
// everything" switch), and what this tool does next time. And, for a
// member, the link to the settings they may change.
import { useCallback, type KeyboardEvent } from "react";
import { useTranslation } from "react-i18next";
import type { Approval } from "../api/types";
import { linkProps } from "../router";
import type { WiderOffer, WiderScope } from "./wider";

export function WiderConfirm({ scope, approval, disabled, onConfirm, onCancel }: {
  scope: WiderScope;
  approval: Approval;
  disabled: boolean;
  onConfirm(): void;
  onCancel(): void;
}) {
  const { t } = useTranslation("chat");
  const server = approval.server_label;
  const focusOnOpen = useCallback((el: HTMLButtonElement | null) => el?.focus(), []);
  const escape = (e: KeyboardEvent) => {
    if (e.key === "Escape") onCancel();
  };
  // The tool asks for a reason the default does not decide: it keeps asking.
  const own = approval.asks_because.source;
  const stays = own === "tool" || own === "locked" || own === "user" || own === "new" || own === "ask_everything"
    || (scope === "everything" && own === "server");
  return (
    <div className="wider-confirm" role="group" aria-label={t(`wider.${scope}.confirmLabel`, { server })}>
      <p><strong>{t(`wider.${scope}.confirm`, { server })}</strong></p>
      <p className="small">{t(`wider.${scope}.kept`, { server })}</p>
      {stays && <p className="small muted">{t("wider.stillAsks")}</p>}
      <div className="confirm-actions">
        <button type="button" className="primary" disabled={disabled} onKeyDown={escape} onClick={onConfirm}>
          {t(`wider.${scope}.approve`, { server })}
        </button>
        <button type="button" ref={focusOnOpen} disabled={disabled} onKeyDown={escape} onClick={onCancel}>
          {t("wider.cancel")}
        </button>
      </div>
    </div>
  );
}

/** A member's way to let more run without asking: their own settings for the server's tools. */
export function WiderLinks({ offer }: { offer: WiderOffer }) {
  const { t } = useTranslation("chat");
  if (offer.links.length === 0) return null;
  return (
    <p className="wider-links small muted">
      {t("wider.memberIntro")}{" "}
      {offer.links.map((l) => (
        <a key={l.key} {...linkProps(l.to)}>{t(`wider.${l.key}`, { server: l.to.page === "settings" ? l.to.server : "" })}</a>
      ))}
    </p>
  );
}
