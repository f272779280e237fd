// The conversations list: new chat, open, rename in place, delete with a
// confirmation inside the page.
import { useEffect, useRef, useState } from "react";
import { api, type ApiError } from "../api/client";
import type { Conversation } from "../api/types";
import { linkProps, navigate } from "../router";

export const untitled = "Untitled conversation";
export const titleOf = (c: Pick<Conversation, "title">) => c.title.trim() || untitled;

function PencilIcon() {
  return <svg aria-hidden="true" viewBox="0 0 16 16" width="14" height="14"><path fill="currentColor" d="M11.7 1.3a1 1 0 0 1 1.4 0l1.6 1.6a1 1 0 0 1 0 1.4L5.4 13.6 1.5 14.5l.9-3.9 9.3-9.3Zm-.3 2.1-7.9 7.9-.4 1.6 1.6-.4 7.9-7.9-1.2-1.2Z" /></svg>;
}
function TrashIcon() {
  return <svg aria-hidden="true" viewBox="0 0 16 16" width="14" height="14"><path fill="currentColor" d="M6 1h4a1 1 0 0 1 1 1v1h3v1.5H2V3h3V2a1 1 0 0 1 1-1Zm.5 2h3v-.5h-3V3ZM3.5 5.5h9l-.7 8.6a1 1 0 0 1-1 .9H5.2a1 1 0 0 1-1-.9l-.7-8.6Zm2.3 1.5.4 6h1.3l-.3-6H5.8Zm3.1 0-.3 6h1.3l.4-6H8.9Z" /></svg>;
}

function Row({ c, current, onChanged }: { c: Conversation; current: boolean; onChanged(): void }) {
  const [mode, setMode] = useState<"view" | "rename" | "delete">("view");
  const [title, setTitle] = useState(c.title);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const inputRef = useRef<HTMLInputElement>(null);
  const renameBtn = useRef<HTMLButtonElement>(null);
  const cancelDeleteBtn = useRef<HTMLButtonElement>(null);
  const name = titleOf(c);

  useEffect(() => {
    if (mode === "rename") inputRef.current?.select();
    if (mode === "delete") cancelDeleteBtn.current?.focus();
  }, [mode]);

  const back = () => {
    setMode("view");
    setError(null);
    requestAnimationFrame(() => renameBtn.current?.focus());
  };

  const save = async () => {
    const t = title.trim();
    if (t === c.title.trim()) { back(); return; }
    setBusy(true);
    setError(null);
    try {
      await api.renameConversation(c.id, t);
      back();
      onChanged();
    } catch (err) {
      setError((err as ApiError).message);
    } finally {
      setBusy(false);
    }
  };

  const remove = async () => {
    setBusy(true);
    setError(null);
    try {
      await api.deleteConversation(c.id);
      if (current) navigate({ page: "chat" });
      onChanged();
    } catch (err) {
      setError((err as ApiError).message);
      setBusy(false);
    }
  };

  if (mode === "rename") {
    return (
      <li className="conv-row editing">
        <form className="conv-rename" onSubmit={(e) => { e.preventDefault(); void save(); }}>
          <input ref={inputRef} aria-label={`New title for ${name}`} value={title} maxLength={200} disabled={busy}
            onChange={(e) => setTitle(e.target.value)}
            onKeyDown={(e) => { if (e.key === "Escape") { e.preventDefault(); setTitle(c.title); back(); } }} />
          <div className="conv-row-actions">
            <button type="submit" className="primary small" disabled={busy}>Save</button>
            <button type="button" className="small" disabled={busy} onClick={() => { setTitle(c.title); back(); }}>Cancel</button>
          </div>
        </form>
        {error && <p className="conv-error" role="alert">{error}</p>}
      </li>
    );
  }

  if (mode === "delete") {
    return (
      <li className="conv-row confirming">
        <div role="group" aria-label={`Delete ${name}?`} className="conv-confirm">
          <p>Delete <strong>{name}</strong>? Its transcript and approval requests go too; remembered policies stay.</p>
          <div className="conv-row-actions">
            <button type="button" className="danger solid small" disabled={busy} onClick={() => void remove()}>Delete</button>
            <button ref={cancelDeleteBtn} type="button" className="small" disabled={busy} onClick={back}>Cancel</button>
          </div>
        </div>
        {error && <p className="conv-error" role="alert">{error}</p>}
      </li>
    );
  }

  return (
    <li className={`conv-row${current ? " current" : ""}`}>
      <a className="conv-link" {...linkProps({ page: "chat", conversationId: c.id })} aria-current={current ? "page" : undefined}
        title={name /* the full title, for when the sidebar cuts it off */}>
        <span className="conv-title">{name}</span>
        {(c.pending_approvals > 0 || c.streaming) && (
          <span className="conv-meta">
            {c.pending_approvals > 0 && <span className="badge needs-approval">needs approval</span>}
            {c.streaming && <span className="badge running">running</span>}
          </span>
        )}
      </a>
      <div className="conv-tools">
        <button ref={renameBtn} type="button" className="icon" aria-label={`Rename ${name}`} title="Rename"
          onClick={() => { setTitle(c.title); setMode("rename"); }}>
          <PencilIcon />
        </button>
        <button type="button" className="icon" aria-label={`Delete ${name}`} title="Delete" onClick={() => setMode("delete")}>
          <TrashIcon />
        </button>
      </div>
    </li>
  );
}

export function Sidebar({ currentId, version, onChanged }: { currentId?: string; version: number; onChanged(): void }) {
  const [list, setList] = useState<Conversation[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let alive = true;
    api.listConversations().then(
      (cs) => { if (alive) { setList(cs); setError(null); } },
      (err: ApiError) => { if (alive) setError(err.message); },
    );
    return () => { alive = false; };
  }, [version]);

  return (
    <nav className="chat-sidebar" aria-label="Conversations">
      <button type="button" className="new-chat" onClick={() => {
        if (currentId) navigate({ page: "chat" });
        else document.querySelector<HTMLTextAreaElement>("textarea[aria-label='Message']")?.focus();
      }}>
        <svg aria-hidden="true" viewBox="0 0 16 16" width="14" height="14"><path fill="currentColor" d="M7.25 2h1.5v5.25H14v1.5H8.75V14h-1.5V8.75H2v-1.5h5.25V2Z" /></svg>
        New chat
      </button>
      <h2 className="sidebar-heading">Conversations</h2>
      {error && <p className="alert error small" role="alert">Could not load the conversations: {error}</p>}
      {list === null && !error && <p className="muted sidebar-empty">Loading…</p>}
      {list?.length === 0 && <p className="muted sidebar-empty">No conversations yet.</p>}
      {list && list.length > 0 && (
        <ul className="conv-list">
          {list.map((c) => (
            <Row key={c.id} c={c} current={c.id === currentId} onChanged={onChanged} />
          ))}
        </ul>
      )}
    </nav>
  );
}
