// The conversations list: new chat, open, rename in place, delete with a
// confirmation inside the page. On a narrow screen it is a drawer over the
// chat: the page's menu button opens it; Escape, a click outside it, moving
// focus out of it, or picking a conversation closes it.
import { useEffect, useRef, useState } from "react";
import type { TFunction } from "i18next";
import { Trans, useTranslation } from "react-i18next";
import type { ApiError } from "../api/client";
import type { Conversation } from "../api/types";
import { linkProps, navigate } from "../router";
import { useTimeUp } from "./ExpiryCountdown";
import { useConversations, useDeleteConversation, useRenameConversation } from "./queries";

export const titleOf = (t: TFunction<"chat">, c: Pick<Conversation, "title">) => c.title.trim() || t("sidebar.untitled");

function PencilIcon() {
  return <svg aria-hidden="true" viewBox="0 0 16 16" width="14" height="14"><path fill="currentColor" d="M11.7 1.3a1 1 0 0 1 1.4 0l1.6 1.6a1 1 0 0 1 0 1.4L5.4 13.6 1.5 14.5l.9-3.9 9.3-9.3Zm-.3 2.1-7.9 7.9-.4 1.6 1.6-.4 7.9-7.9-1.2-1.2Z" /></svg>;
}
function TrashIcon() {
  return <svg aria-hidden="true" viewBox="0 0 16 16" width="14" height="14"><path fill="currentColor" d="M6 1h4a1 1 0 0 1 1 1v1h3v1.5H2V3h3V2a1 1 0 0 1 1-1Zm.5 2h3v-.5h-3V3ZM3.5 5.5h9l-.7 8.6a1 1 0 0 1-1 .9H5.2a1 1 0 0 1-1-.9l-.7-8.6Zm2.3 1.5.4 6h1.3l-.3-6H5.8Zm3.1 0-.3 6h1.3l.4-6H8.9Z" /></svg>;
}

function Row({ c, current, onPicked }: { c: Conversation; current: boolean; onPicked(): void }) {
  const { t } = useTranslation("chat");
  const [mode, setMode] = useState<"view" | "rename" | "delete">("view");
  const [title, setTitle] = useState(c.title);
  const rename = useRenameConversation();
  const remove = useDeleteConversation();
  const inputRef = useRef<HTMLInputElement>(null);
  const renameBtn = useRef<HTMLButtonElement>(null);
  const cancelDeleteBtn = useRef<HTMLButtonElement>(null);
  const name = titleOf(t, c);
  const busy = rename.isPending || remove.isPending;
  // Once the last pending request's time is up nothing waits for a decision, sweep or not.
  const allExpired = useTimeUp(c.pending_expires_at);
  const needsApproval = c.pending_approvals > 0 && !allExpired;
  const error = (mode === "rename" ? rename.error : mode === "delete" ? remove.error : null) as ApiError | null;

  useEffect(() => {
    if (mode === "rename") inputRef.current?.select();
    if (mode === "delete") cancelDeleteBtn.current?.focus();
  }, [mode]);

  const to = (m: "rename" | "delete") => {
    rename.reset();
    remove.reset();
    setTitle(c.title);
    setMode(m);
  };
  const back = () => {
    setMode("view");
    requestAnimationFrame(() => renameBtn.current?.focus());
  };
  const save = () => {
    const next = title.trim();
    if (next === c.title.trim()) { back(); return; }
    rename.mutate({ id: c.id, title: next }, { onSuccess: back });
  };
  const del = () => remove.mutate(c.id, { onSuccess: () => { if (current) navigate({ page: "chat" }); } });

  if (mode === "rename") {
    return (
      <li className="conv-row editing">
        <form className="conv-rename" onSubmit={(e) => { e.preventDefault(); save(); }}>
          <input ref={inputRef} aria-label={t("sidebar.newTitle", { name })} value={title} maxLength={200} disabled={busy}
            onChange={(e) => setTitle(e.target.value)}
            onKeyDown={(e) => { if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); back(); } }} />
          <div className="conv-row-actions">
            <button type="submit" className="primary small" disabled={busy}>{t("sidebar.save")}</button>
            <button type="button" className="small" disabled={busy} onClick={back}>{t("sidebar.cancel")}</button>
          </div>
        </form>
        {error && <p className="conv-error" role="alert">{error.message}</p>}
      </li>
    );
  }

  if (mode === "delete") {
    return (
      <li className="conv-row confirming">
        <div role="group" aria-label={t("sidebar.deleteConfirmLabel", { name })} className="conv-confirm">
          <p><Trans t={t} i18nKey="sidebar.deleteConfirm" components={{ name: <strong>{name}</strong> }} /></p>
          <div className="conv-row-actions">
            <button type="button" className="danger solid small" disabled={busy} onClick={del}>{t("sidebar.delete")}</button>
            <button ref={cancelDeleteBtn} type="button" className="small" disabled={busy} onClick={back}>{t("sidebar.cancel")}</button>
          </div>
        </div>
        {error && <p className="conv-error" role="alert">{error.message}</p>}
      </li>
    );
  }

  return (
    <li className={`conv-row${current ? " current" : ""}`}>
      <a className="conv-link" {...linkProps({ page: "chat", conversationId: c.id })} aria-current={current ? "page" : undefined}
        title={name /* the full title, for when the sidebar cuts it off */}
        onClickCapture={onPicked}>
        <span className="conv-title">{name}</span>
        {(needsApproval || c.streaming) && (
          <span className="conv-meta">
            {needsApproval && <span className="badge needs-approval">{t("sidebar.needsApproval")}</span>}
            {c.streaming && <span className="badge running">{t("sidebar.running")}</span>}
          </span>
        )}
      </a>
      <div className="conv-tools">
        <button ref={renameBtn} type="button" className="icon" aria-label={t("sidebar.rename", { name })} title={t("sidebar.renameShort")}
          onClick={() => to("rename")}>
          <PencilIcon />
        </button>
        <button type="button" className="icon" aria-label={t("sidebar.deleteNamed", { name })} title={t("sidebar.delete")} onClick={() => to("delete")}>
          <TrashIcon />
        </button>
      </div>
    </li>
  );
}

export interface SidebarProps {
  currentId?: string;
  id: string;
  /** Open as a drawer (narrow screens; on wide ones it is always shown). */
  open: boolean;
  /** Escape (returnFocus: back to where the drawer was opened from), a click or focus outside. */
  onClose(returnFocus: boolean): void;
  /** A conversation, or New chat, was picked. */
  onPicked(newChat: boolean): void;
}

export function Sidebar({ currentId, id, open, onClose, onPicked }: SidebarProps) {
  const { t } = useTranslation("chat");
  const list = useConversations();
  const nav = useRef<HTMLElement>(null);
  const first = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (!open) return;
    first.current?.focus();
    const outside = (target: EventTarget | null) =>
      target instanceof Node && !nav.current?.contains(target) && !(target instanceof Element && target.closest("[aria-controls]")?.getAttribute("aria-controls") === id);
    const onKey = (e: KeyboardEvent) => { if (e.key === "Escape") { e.preventDefault(); onClose(true); } };
    const onPointer = (e: PointerEvent) => { if (outside(e.target)) onClose(false); };
    const onFocus = (e: FocusEvent) => { if (outside(e.target)) onClose(false); };
    document.addEventListener("keydown", onKey);
    document.addEventListener("pointerdown", onPointer);
    document.addEventListener("focusin", onFocus);
    return () => {
      document.removeEventListener("keydown", onKey);
      document.removeEventListener("pointerdown", onPointer);
      document.removeEventListener("focusin", onFocus);
    };
  }, [open, onClose, id]);

  const newChat = () => {
    onPicked(true);
    if (currentId) navigate({ page: "chat" });
  };

  return (
    <>
      {open && <div className="drawer-backdrop" aria-hidden="true" />}
      <nav id={id} ref={nav} className={`chat-sidebar${open ? " is-open" : ""}`} aria-label={t("sidebar.label")}>
        <button ref={first} type="button" className="new-chat" onClick={newChat}>
          <svg aria-hidden="true" viewBox="0 0 16 16" width="14" height="14"><path fill="currentColor" d="M7.25 2h1.5v5.25H14v1.5H8.75V14h-1.5V8.75H2v-1.5h5.25V2Z" /></svg>
          {t("sidebar.newChat")}
        </button>
        <h2 className="sidebar-heading">{t("sidebar.heading")}</h2>
        {list.error && <p className="alert error small" role="alert">{t("sidebar.loadError", { message: list.error.message })}</p>}
        {list.isPending && <p className="muted sidebar-empty">{t("sidebar.loading")}</p>}
        {list.data?.length === 0 && <p className="muted sidebar-empty">{t("sidebar.empty")}</p>}
        {list.data && list.data.length > 0 && (
          <ul className="conv-list">
            {list.data.map((c) => (
              <Row key={c.id} c={c} current={c.id === currentId} onPicked={() => onPicked(false)} />
            ))}
          </ul>
        )}
      </nav>
    </>
  );
}
