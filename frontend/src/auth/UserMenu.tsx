// The user menu in the top bar: who is signed in, their pages, sign out.
// A disclosure (button + list of links), closed by Escape or a click elsewhere.
import { useEffect, useId, useRef, useState } from "react";
import type { Me } from "../api/types";
import { linkProps } from "../router";

export function UserMenu({ me, onSignOut }: { me: Me; onSignOut(): Promise<void> }) {
  const id = useId();
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const root = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (!open) return;
    const onDown = (e: MouseEvent) => {
      if (!root.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener("mousedown", onDown);
    return () => document.removeEventListener("mousedown", onDown);
  }, [open]);

  const link = (to: Parameters<typeof linkProps>[0]) => {
    const p = linkProps(to);
    return { href: p.href, onClick: (e: React.MouseEvent) => { p.onClick(e); setOpen(false); } };
  };

  return (
    <div className="user-menu" ref={root}
      onKeyDown={(e) => { if (e.key === "Escape" && open) { setOpen(false); button.current?.focus(); } }}>
      <button type="button" ref={button} aria-expanded={open} aria-controls={`${id}-panel`}
        aria-label={`Account: ${me.email}`} onClick={() => setOpen(!open)}>
        <span className="user-email">{me.email}</span> <span aria-hidden="true">▾</span>
      </button>
      {open && (
        <div id={`${id}-panel`} className="user-menu-panel">
          <p className="user-who">
            <strong>{me.email}</strong>
            <span className={`badge role-${me.role}`}>{me.role}</span>
          </p>
          <ul>
            <li><a {...link({ page: "tokens" })}>API tokens</a></li>
            {me.role === "admin" && <li><a {...link({ page: "users" })}>Users</a></li>}
            <li>
              <button type="button" disabled={busy} onClick={async () => {
                setBusy(true);
                try { await onSignOut(); } finally { setBusy(false); setOpen(false); }
              }}>{busy ? "Signing out…" : "Sign out"}</button>
            </li>
          </ul>
        </div>
      )}
    </div>
  );
}
