// "Waiting for me": every approval request waiting for the signed-in person,
// across their chats and agents, oldest first, each with the card the chat
// shows (ApprovalCard) and where it came from. A decision goes to POST
// /api/approvals/{id}/decision: a chat's follow-up runs on the server (the
// chat shows it), an agent's held call runs or gets the denial. The list
// is live (useInboxEvents in the shell); the title counts what waits.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useId, useState } from "react";
import { useTranslation } from "react-i18next";
import { ApiError, api } from "../api/client";
import { inboxQuery, keys } from "../api/query";
import type { Decision, InboxApproval, InboxDecision } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { useIsAdmin } from "../auth/session";
import { ApprovalCard } from "../chat/ApprovalCard";
import { baseTitle } from "../chat/useAttention";
import { linkProps } from "../router";
import "./inbox.css";

type Status = { state: "sending" } | { state: "error"; error: string };
/** What a decision sent from this page became, said once under the heading. */
interface Outcome { id: string; text: string }

/** The codes that mean "it waits for nothing any more": the list is read again. */
const settledCodes = new Set(["approval_already_decided", "approval_superseded", "approval_expired", "approval_withdrawn", "approval_not_found"]);

/** The document title with the count of what waits. */
export function inboxTitle(heading: string, count: number): string {
  return count > 0 ? `(${count}) ${heading} · ${baseTitle}` : `${heading} · ${baseTitle}`;
}

function Source({ a }: { a: InboxApproval }) {
  const { t } = useTranslation("chat");
  const s = a.source;
  if (s.kind === "agent") {
    const client = s.client ? [s.client.title || s.client.name, s.client.version].filter(Boolean).join(" ") : t("inbox.unknownClient");
    return <p className="inbox-source">{t("inbox.fromAgent", { client })}</p>;
  }
  return (
    <p className="inbox-source">
      {t("inbox.fromChat")}{" "}
      <a {...linkProps({ page: "chat", conversationId: s.conversation_id, approval: a.approval_request_id })}>
        {s.title || t("inbox.untitled")}
      </a>
    </p>
  );
}

/** Approve all / Deny all (with one reason), one decision after another. */
function DecideAll({ count, disabled, onAll }: { count: number; disabled: boolean; onAll(approve: boolean, reason: string): void }) {
  const { t } = useTranslation("chat");
  const [reason, setReason] = useState("");
  const id = useId();
  return (
    <div className="approval-all inbox-all" role="group" aria-label={t("queue.allLabel", { count })}>
      <label htmlFor={`${id}-reason`}>{t("queue.allReason")}</label>
      <input id={`${id}-reason`} type="text" value={reason} maxLength={2000} disabled={disabled} onChange={(e) => setReason(e.target.value)} />
      <button type="button" className="primary" disabled={disabled} onClick={() => onAll(true, "")}>{t("queue.approveAll", { count })}</button>
      <button type="button" className="danger" disabled={disabled} onClick={() => onAll(false, reason.trim())}>{t("queue.denyAll", { count })}</button>
    </div>
  );
}

export function InboxPage() {
  const { t } = useTranslation("chat");
  const errorText = useErrorText();
  const qc = useQueryClient();
  const admin = useIsAdmin();
  const inbox = useQuery(inboxQuery);
  const waiting = inbox.data ?? [];
  const [status, setStatus] = useState<Record<string, Status>>({});
  const [outcomes, setOutcomes] = useState<Outcome[]>([]);
  const heading = t("inbox.title");

  useEffect(() => {
    document.title = inboxTitle(heading, waiting.length);
    return () => { document.title = baseTitle; };
  }, [heading, waiting.length]);

  const mark = (id: string, s: Status | null) => setStatus((cur) => {
    const next = { ...cur };
    if (s) next[id] = s;
    else delete next[id];
    return next;
  });

  /** Sends one decision; resolves once the server answered. */
  const send = async (a: InboxApproval, d: Decision) => {
    const id = a.approval_request_id;
    mark(id, { state: "sending" });
    const body: InboxDecision = { ...d, approval_request_id: id };
    try {
      const decided = await api.decideWaiting(id, body);
      mark(id, null);
      qc.setQueryData<InboxApproval[]>(keys.inbox, (list) => list?.filter((x) => x.approval_request_id !== id));
      setOutcomes((cur) => [{ id, text: t(decided.state === "approved" ? "inbox.approved" : "inbox.denied", { tool: a.tool_name, server: a.server_label }) },
        ...cur.filter((o) => o.id !== id)].slice(0, 5));
      void qc.invalidateQueries({ queryKey: keys.conversation(a.conversation_id), exact: true });
    } catch (err) {
      const e = err instanceof ApiError ? err : null;
      if (e && settledCodes.has(e.code)) {
        mark(id, null);
        setOutcomes((cur) => [{ id, text: t("inbox.settled", { tool: a.tool_name, server: a.server_label }) }, ...cur].slice(0, 5));
      } else {
        mark(id, { state: "error", error: errorText(err) });
      }
    }
    void qc.invalidateQueries({ queryKey: keys.inbox, exact: true });
  };

  const sending = Object.values(status).some((s) => s.state === "sending");
  const all = async (approve: boolean, reason: string) => {
    for (const a of waiting) {
      const d: Decision = { approval_request_id: a.approval_request_id, approve };
      if (!approve && reason) d.reason = reason;
      await send(a, d);
    }
  };

  return (
    <div className="inbox-page">
      <h1>{heading}</h1>
      <p className="muted">{t("inbox.intro")}</p>
      <div role="status" className="inbox-outcomes">
        {outcomes.map((o) => <p key={o.id}>{o.text}</p>)}
      </div>
      {inbox.isError && <p className="alert error" role="alert">{errorText(inbox.error)}</p>}
      {inbox.isPending && <p className="muted">{t("inbox.loading")}</p>}
      {inbox.isSuccess && waiting.length === 0 && <p className="inbox-empty">{t("inbox.empty")}</p>}
      {waiting.length > 1 && <DecideAll count={waiting.length} disabled={sending} onAll={(approve, reason) => void all(approve, reason)} />}
      <ul className="inbox-list" aria-label={t("inbox.listLabel", { count: waiting.length })}>
        {waiting.map((a) => {
          const s = status[a.approval_request_id];
          const others = waiting.filter((o) => o !== a && o.conversation_id === a.conversation_id && o.response_id === a.response_id);
          return (
            <li key={a.approval_request_id}>
              <Source a={a} />
              <ApprovalCard approval={a} busy={s?.state === "sending"} busyText={t("card.sending")} role={admin ? "admin" : "member"}
                error={s?.state === "error" ? s.error : undefined} others={others} onDecide={(d) => void send(a, d)} />
            </li>
          );
        })}
      </ul>
    </div>
  );
}
