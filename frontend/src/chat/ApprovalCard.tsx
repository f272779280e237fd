// One pending approval request, inline in the conversation. A pure component:
// it shows the request and reports the person's decision through onDecide.
import { forwardRef, useEffect, useId, useRef, useState } from "react";
import { annotationBadges } from "../api/annotations";
import type { Approval, Decision } from "../api/types";
import { asksBecausePhrase } from "../settings/policy";
import { JsonView, RedactedNote } from "./JsonView";

export interface ApprovalCardProps {
  approval: Approval;
  /** A decision for this card is being sent, or the card cannot be decided yet. */
  busy: boolean;
  /** Why busy, for people (e.g. "Sending your decision…"). */
  busyText?: string;
  /** The server refused the decision: its sentence. */
  error?: string;
  onDecide(d: Decision): void;
}

const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Why the card asks: the hint-based default, a new or changed tool, or the policy and where it was set. */
export function asksBecauseText(ab: Approval["asks_because"] | string | undefined): string {
  const why = typeof ab === "string" ? { source: ab } as Approval["asks_because"] : ab;
  const phrase = why && asksBecausePhrase(why.reason ? { ...why, reason: why.reason } : undefined,
    why.changed?.fields ?? why.fields);
  if (phrase) return capitalise(phrase);
  switch (why?.source) {
    case "tool": return "Asks because this tool's policy is Ask";
    case "server": return "Asks because the server default is Ask";
    case "global": return "Asks because the global default is Ask";
    case "user": return "Asks because your own policy for this tool is Ask";
    case "locked": return "Asks because an admin locked this tool at Ask";
    case "new": return "New: asks until someone sets its policy";
    case "changed": return "Changed since you allowed it";
    default: return "Asks because Toolgate has not seen this tool before (unknown tools always ask)";
  }
}

function Badges({ a }: { a: Approval["annotations"] }) {
  const badges = annotationBadges(a);
  if (badges.length === 0) return null;
  return (
    <div className="approval-badges">
      <ul aria-label="Hints from the MCP server">
        {badges.map((b) => (
          <li key={b.key}><span className={`badge ${b.key}`} title={b.title}>{b.label}</span></li>
        ))}
      </ul>
      <span className="approval-hint-note">hints from the MCP server, not verified</span>
    </div>
  );
}

export const ApprovalCard = forwardRef<HTMLElement, ApprovalCardProps>(function ApprovalCard(
  { approval, busy, busyText, error, onDecide },
  ref,
) {
  const tool = approval.tool_name;
  const server = approval.server_label;
  const [remember, setRemember] = useState(false);
  const [conversation, setConversation] = useState(false);
  const [reason, setReason] = useState("");
  const [intent, setIntent] = useState<"approve" | "deny" | null>(null);
  // A click sends at most one decision: the guard holds until the server
  // refuses it (a new error) and the person may decide again.
  const [sent, setSent] = useState(false);
  const sentRef = useRef(false);
  useEffect(() => {
    if (error) { sentRef.current = false; setSent(false); }
  }, [error]);
  const ids = useId();
  const disabled = busy || sent;

  const decide = (approve: boolean) => {
    if (sentRef.current || busy) return;
    sentRef.current = true;
    setSent(true);
    const d: Decision = { approval_request_id: approval.approval_request_id, approve };
    const r = reason.trim();
    if (r) d.reason = r;
    if (remember) d.remember = true;
    if (approve && conversation) d.scope = "conversation";
    onDecide(d);
  };

  const rememberHint =
    intent === "approve" ? `Approving will never ask you again for ${tool} (your own policy)`
    : intent === "deny" ? `Denying will block ${tool} for you (your own policy)`
    : `Approve: never ask you again for ${tool} · Deny: block ${tool} for you (your own policy; others are not affected)`;
  const title = approval.annotations?.title;

  return (
    <article
      ref={ref}
      tabIndex={-1}
      className={`approval-card${busy || sent ? " is-busy" : ""}`}
      aria-label={`Approval request: ${tool} on ${server}`}
      aria-busy={disabled || undefined}
    >
      <header className="approval-head">
        <span className="approval-eyebrow">
          <svg aria-hidden="true" viewBox="0 0 16 16" width="14" height="14"><path fill="currentColor" d="M8 1 2 3.5v4C2 11 4.6 14 8 15c3.4-1 6-4 6-7.5v-4L8 1Zm-.75 4h1.5v4.5h-1.5V5Zm0 5.5h1.5V12h-1.5v-1.5Z" /></svg>
          Approval needed
        </span>
        <h2 className="approval-title">
          <code className="approval-tool">{tool}</code>
          <span className="approval-on"> on </span>
          <span className="approval-server">{server}</span>
        </h2>
        {title && <p className="approval-tool-title">{title}</p>}
        <Badges a={approval.annotations} />
        <p className="approval-why">{asksBecauseText(approval.asks_because)}.</p>
      </header>

      <section className="approval-args" aria-label="Arguments">
        <h3>Arguments</h3>
        <JsonView value={approval.arguments} redacted={approval.redacted} />
        <RedactedNote redacted={approval.redacted} />
      </section>

      <div className="approval-options">
        <div className="approval-option">
          <input id={`${ids}-remember`} type="checkbox" checked={remember} disabled={disabled}
            aria-describedby={`${ids}-remember-hint`} onChange={(e) => setRemember(e.target.checked)} />
          <label htmlFor={`${ids}-remember`}>Remember for this tool</label>
          <span id={`${ids}-remember-hint`} className={`option-hint${remember ? " is-on" : ""}`}>{rememberHint}</span>
        </div>
        <div className="approval-option">
          <input id={`${ids}-conv`} type="checkbox" checked={conversation} disabled={disabled}
            aria-describedby={`${ids}-conv-hint`} onChange={(e) => setConversation(e.target.checked)} />
          <label htmlFor={`${ids}-conv`}>Allow for this conversation</label>
          <span id={`${ids}-conv-hint`} className="option-hint">
            With Approve: {tool} runs without asking for the rest of this conversation
          </span>
        </div>
        <div className="approval-reason">
          <label htmlFor={`${ids}-reason`}>Reason (optional, sent to the model)</label>
          <textarea id={`${ids}-reason`} rows={2} value={reason} disabled={disabled} maxLength={2000}
            placeholder="The model reads this with your answer"
            onChange={(e) => setReason(e.target.value)} />
        </div>
      </div>

      {error && <p className="alert error approval-error" role="alert">{error}</p>}

      <div className="approval-actions">
        <button type="button" className="primary" disabled={disabled} onClick={() => decide(true)}
          onMouseEnter={() => setIntent("approve")} onMouseLeave={() => setIntent(null)}
          onFocus={() => setIntent("approve")} onBlur={() => setIntent(null)}>
          Approve
        </button>
        <button type="button" className="danger" disabled={disabled} onClick={() => decide(false)}
          onMouseEnter={() => setIntent("deny")} onMouseLeave={() => setIntent(null)}
          onFocus={() => setIntent("deny")} onBlur={() => setIntent(null)}>
          Deny
        </button>
        {disabled && (
          <span className="approval-busy" role="status">
            <span className="spinner" aria-hidden="true" />
            {busyText ?? "Sending your decision…"}
          </span>
        )}
      </div>
    </article>
  );
});
