// Tells the person that a card waits while they look elsewhere: the tab's
// title counts the waiting cards while the tab is hidden ("(2) Toolgate"):
// the open conversation's, live, and the other conversations' from the
// list (read now and then while hidden); a browser notification names the
// tool when a new card arrives in a hidden tab, or says how many more wait
// elsewhere. Permission is asked the first time a card waits while the
// tab is visible (a prompt in a hidden tab would go unseen); a refusal is
// kept by the browser and never asked again.
import { useEffect, useRef } from "react";
import type { Approval } from "../api/types";
import i18n from "../i18n";

export const baseTitle = "Toolgate";

/** The document title for count waiting cards. */
export function attentionTitle(count: number, hidden: boolean): string {
  return hidden && count > 0 ? `(${count}) ${baseTitle}` : baseTitle;
}

export function useAttention(pending: Approval[], elsewhere = 0) {
  const count = pending.length + elsewhere;
  useEffect(() => {
    const apply = () => { document.title = attentionTitle(count, document.hidden); };
    apply();
    document.addEventListener("visibilitychange", apply);
    return () => {
      document.removeEventListener("visibilitychange", apply);
      document.title = baseTitle;
    };
  }, [count]);

  const seen = useRef<Set<string> | null>(null);
  const ids = pending.map((a) => a.approval_request_id).join(" ");
  const latest = useRef(pending);
  useEffect(() => { latest.current = pending; });
  useEffect(() => {
    const cards = latest.current;
    const first = seen.current === null;
    seen.current ??= new Set();
    const fresh = cards.filter((a) => !seen.current!.has(a.approval_request_id));
    for (const a of cards) seen.current.add(a.approval_request_id);
    if (fresh.length === 0 || typeof Notification === "undefined") return;
    if (Notification.permission === "default" && !document.hidden) {
      void Notification.requestPermission();
      return;
    }
    // Cards already there when the page opened were seen with it.
    if (first || Notification.permission !== "granted" || !document.hidden) return;
    const a = fresh[0];
    const n = new Notification(i18n.t("chat:attention.title", { count: fresh.length }), {
      body: i18n.t("chat:attention.body", { tool: a.tool_name, server: a.server_label }),
      tag: "toolgate-approval",
    });
    n.onclick = () => { window.focus(); n.close(); };
  }, [ids]);

  // Cards waiting in other conversations: notify when there are more than before.
  const before = useRef<number | null>(null);
  useEffect(() => {
    const prev = before.current;
    before.current = elsewhere;
    if (prev === null || elsewhere <= prev || typeof Notification === "undefined") return;
    if (Notification.permission !== "granted" || !document.hidden) return;
    const n = new Notification(i18n.t("chat:attention.title", { count: elsewhere }), {
      body: i18n.t("chat:attention.elsewhere", { count: elsewhere }), tag: "toolgate-approval",
    });
    n.onclick = () => { window.focus(); n.close(); };
  }, [elsewhere]);
}
