// The page a signed approve or deny link of a webhook delivery opens
// (/link/{approval_request_id}#{token}). Opening it decides nothing: link
// previews and mail scanners open links. It shows the card and the link's one
// decision; the person's click POSTs it, once. It works without a session:
// the token, read from the fragment (never sent to a server in a URL), decides
// as the person the link was sent for.
import { useMutation, useQuery } from "@tanstack/react-query";
import { useId, useState } from "react";
import { useTranslation } from "react-i18next";
import { ApiError, api } from "../api/client";
import type { Approval, ApprovalLinkView } from "../api/types";
import { asksBecauseText } from "../chat/ApprovalCard";
import { Escaped } from "../chat/Escaped";
import { ExpiryCountdown, useTimeUp } from "../chat/ExpiryCountdown";
import { JsonView, RedactedNote } from "../chat/JsonView";
import "../chat/chat.css";
import "./link.css";

export function LinkPage({ approvalRequestId, token }: { approvalRequestId: string; token: string }) {
  const { t } = useTranslation("common");
  const view = useQuery({
    queryKey: ["approval-link", approvalRequestId, token],
    queryFn: () => api.viewApprovalLink(approvalRequestId, token),
    retry: false, staleTime: Infinity, refetchOnWindowFocus: false,
  });
  const decide = useMutation({ mutationFn: (reason: string) => api.decideByApprovalLink(approvalRequestId, token, reason) });

  let body;
  if (decide.data) body = <Decided v={decide.data} />;
  else if (view.data) body = <LinkCard v={view.data} busy={decide.isPending} error={decide.error} onDecide={(r) => decide.mutate(r)} />;
  else if (view.error) body = <Refused error={view.error} />;
  else body = <p className="muted" role="status">{t("link.checking")}</p>;
  return (
    <main className="link-page">
      <div className="link-box">
        <p className="link-brand">Toolgate</p>
        {body}
      </div>
    </main>
  );
}

/** The refusals the page names in its heading; any other shows "could not be opened". */
export const LINK_REFUSALS = ["link_used", "link_expired", "link_invalid", "link_other_request", "link_other_person",
  "link_request_decided", "account_disabled"] as const;

/** Why the link does nothing: a heading by code, the server's sentence, the code. */
function Refused({ error }: { error: unknown }) {
  const { t } = useTranslation("common");
  const e = error instanceof ApiError ? error : new ApiError(0, "network_error", String(error));
  const known: readonly string[] = LINK_REFUSALS;
  const approval = (e.details as { approval?: Approval } | undefined)?.approval;
  return (
    <section className="link-refused" aria-labelledby="link-refused-title">
      <h1 id="link-refused-title">{t(`link.refused.${known.includes(e.code) ? e.code : "other"}`)}</h1>
      <p className="alert error" role="alert">{e.message}</p>
      {approval && <p>{t("link.nowState", { state: t(`link.state.${approval.state}`) })}</p>}
      <p className="muted small">{t("link.code", { code: e.code })}</p>
      <p><a href="/">{t("link.openToolgate")}</a></p>
    </section>
  );
}

function LinkCard({ v, busy, error, onDecide }: { v: ApprovalLinkView; busy: boolean; error: unknown; onDecide(reason: string): void }) {
  const { t } = useTranslation("common");
  const { t: tc } = useTranslation("chat");
  const a = v.approval;
  const approve = v.link.decision === "approve";
  const [reason, setReason] = useState("");
  const ids = useId();
  const timeUp = useTimeUp(a.expires_at);
  const err = error instanceof ApiError ? error : null;
  if (err && err.code.startsWith("link_")) return <Refused error={err} />;
  return (
    <article className="approval-card link-card" aria-label={tc("card.label", { tool: a.tool_name, server: a.server_label })}>
      <header className="approval-head">
        <span className="approval-eyebrow">{tc("card.eyebrow")}</span>
        <h1 className="approval-title">
          <code className="approval-tool"><Escaped text={a.tool_name} /></code>
          <span className="approval-on"> {tc("card.on")} </span>
          <span className="approval-server">{a.server_label}</span>
        </h1>
        {v.link.conversation_title && <p className="link-where">{t("link.where", { title: v.link.conversation_title })}</p>}
        <p className="approval-why">{asksBecauseText(tc, a.asks_because)}.</p>
        {a.approval_text && <p className="approval-text"><Escaped text={a.approval_text} /></p>}
        <ExpiryCountdown expiresAt={a.expires_at} />
      </header>
      <section className="approval-args" aria-label={tc("card.arguments")}>
        <h2>{tc("card.arguments")}</h2>
        <JsonView value={a.arguments} redacted={a.redacted} />
        <RedactedNote redacted={a.redacted} />
      </section>
      <p className="link-as">{t(approve ? "link.asApprove" : "link.asDeny", { email: v.link.person_email })}</p>
      <div className="approval-reason">
        <label htmlFor={`${ids}-reason`}>{tc("card.reason")}</label>
        <textarea id={`${ids}-reason`} rows={2} maxLength={2000} value={reason} disabled={busy || timeUp}
          placeholder={tc("card.reasonPlaceholder")} onChange={(e) => setReason(e.target.value)} />
      </div>
      {err && <p className="alert error" role="alert">{err.message}</p>}
      <div className="approval-actions">
        <button type="button" className={approve ? "primary" : "danger solid"} disabled={busy || timeUp}
          onClick={() => onDecide(reason.trim())}>
          {t(approve ? "link.approve" : "link.deny")}
        </button>
        {busy && <span className="approval-busy" role="status"><span className="spinner" aria-hidden="true" />{tc("card.sending")}</span>}
      </div>
      <p className="muted small">{t("link.once")}</p>
    </article>
  );
}

function Decided({ v }: { v: ApprovalLinkView }) {
  const { t } = useTranslation("common");
  const a = v.approval;
  return (
    <section className="link-done" aria-labelledby="link-done-title">
      <h1 id="link-done-title">{t(a.state === "approved" ? "link.approved" : "link.denied", { tool: a.tool_name, server: a.server_label })}</h1>
      <p role="status">{t(a.state === "approved" ? "link.approvedNext" : "link.deniedNext", { email: a.decided_by ?? v.link.person_email })}</p>
      <p><a href={`/c/${encodeURIComponent(a.conversation_id)}#approval-${encodeURIComponent(a.approval_request_id)}`}>{t("link.openConversation")}</a></p>
    </section>
  );
}
