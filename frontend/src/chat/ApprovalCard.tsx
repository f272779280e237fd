// One pending approval request, inline in the conversation. A pure component:
// it shows the request and reports the person's decision through onDecide.
import { forwardRef, useId, useState } from "react";
import type { TFunction } from "i18next";
import { Trans, useTranslation } from "react-i18next";
import type { Approval, ApprovalChoice, Decision, RuleCheck } from "../api/types";
import { DecisionMenu } from "./DecisionMenu";
import { CorrectionPanel } from "./CorrectionEditor";
import { CorrectsNote } from "./CorrectsNote";
import { ExpiryCountdown, useTimeUp } from "./ExpiryCountdown";
import { JsonView, RedactedNote } from "./JsonView";
import { Escaped } from "./Escaped";
import { Digest } from "./GatewayCall";
import { BatchList } from "./BatchList";
import { escapedText, hasHidden, hasHiddenDeep } from "./escape";
import { isWider, widerOffer, type WiderScope } from "./wider";
import { WiderConfirm, WiderLinks } from "./WiderConfirm";

export interface ApprovalCardProps {
  approval: Approval;
  /** A decision for this card is being sent, or the card cannot be decided yet. */
  busy: boolean;
  /** Why busy, for people (e.g. "Sending your decision…"). */
  busyText?: string;
  /** The server refused the decision: its sentence. */
  error?: string;
  /** The other requests of the same response still waiting: Stop denies them too. */
  others?: readonly Approval[];
  /** The decider's role: an admin may approve wider (a workspace default), a member gets a link to their settings; unknown offers neither. */
  role?: "admin" | "member";
  onDecide(d: Decision): void;
}

type Why = Approval["asks_because"];

/** Why the card asks: the hint-based default, a new or changed tool, or the policy and where it was set. */
/** What the argument rules made of a request the person decides: how many were checked, and why none decided. */
export function rulesCheckedText(t: TFunction<"chat">, c: RuleCheck): string {
  // The error says what failed; the rule is named here, once.
  if (c.error && c.rule) return t("rules.errorAt", { count: c.checked, n: c.rule.index + 1, scope: t(`rules.scope.${c.rule.scope}`), error: c.error });
  if (c.error) return t("rules.error", { count: c.checked, error: c.error });
  if (c.clamped && c.rule) return t("rules.clamped", { n: c.rule.index + 1, when: c.rule.when });
  if (c.rule) return t("rules.asked", { n: c.rule.index + 1, when: c.rule.when, scope: t(`rules.scope.${c.rule.scope}`) });
  return t("rules.none", { count: c.checked });
}

export function asksBecauseText(t: TFunction<"chat">, why: Why | undefined): string {
  switch (why?.reason) {
    case "not_read_only": return t("why.notReadOnly");
    case "new_tool": return t("why.newTool");
    case "read_only_changed": return t("why.readOnlyChanged");
    case "read_only_claimed": return t("why.readOnlyClaimed");
    case "ask_everything": return t("why.askEverything");
    case "unverified": return t("why.unverified");
    case "rules": return t("why.rules");
    case "changed": {
      const fields = (why.fields ?? []).map((f) => t(`why.field.${f}`)).join(", ");
      return fields ? t("why.changedFields", { fields }) : t("why.changed");
    }
  }
  switch (why?.source) {
    case "tool": case "server": case "global": case "user": case "locked": case "new": case "changed":
      return t(`why.source.${why.source}`);
    default: return t("why.source.unknown");
  }
}

/** The tool's MCP hints that are true, as badges: they come from the MCP server, not verified. */
function Badges({ a }: { a: Approval["annotations"] }) {
  const { t } = useTranslation("chat");
  const hints = ([["readOnlyHint", "read-only"], ["destructiveHint", "destructive"], ["openWorldHint", "open-world"]] as const)
    .filter(([k]) => a?.[k] === true);
  if (hints.length === 0) return null;
  return (
    <div className="approval-badges">
      <ul aria-label={t("card.hintsLabel")}>
        {hints.map(([k, cls]) => (
          <li key={k}><span className={`badge ${cls}`} title={t(`card.hint.${k}.title`)}>{t(`card.hint.${k}.label`)}</span></li>
        ))}
      </ul>
      <span className="approval-hint-note">{t("card.hintsNote")}</span>
    </div>
  );
}

export const ApprovalCard = forwardRef<HTMLElement, ApprovalCardProps>(function ApprovalCard(
  { approval, busy, busyText, error, others = [], role, onDecide },
  ref,
) {
  const { t } = useTranslation("chat");
  // Hidden characters in the name are shown escaped wherever it is quoted.
  const tool = escapedText(approval.tool_name);
  const server = approval.server_label;
  const [reason, setReason] = useState("");
  const [correcting, setCorrecting] = useState(false);
  const [widening, setWidening] = useState<WiderScope | null>(null);
  // A click sends at most one decision: the guard holds until the server
  // refuses it (a new error), or the page is done sending and the request
  // is still pending (busy ends): then the person may decide again.
  const [sent, setSent] = useState(false);
  const [seen, setSeen] = useState({ error, busy });
  if (seen.error !== error || seen.busy !== busy) {
    setSeen({ error, busy });
    if ((error && error !== seen.error) || (seen.busy && !busy)) setSent(false);
  }
  const ids = useId();
  // At 0:00 the request can no longer be decided (the server refuses it).
  const timeUp = useTimeUp(approval.expires_at);
  const disabled = busy || sent || timeUp;
  const sending = (busy || sent) && !timeUp;

  // One choice, one meaning: each menu item says exactly what it does.
  const decide = (approve: boolean, how: string) => {
    if (disabled) return;
    setSent(true);
    const d: Decision = { approval_request_id: approval.approval_request_id, approve };
    const r = reason.trim();
    if (r) d.reason = r;
    if (how === "always") d.remember = true;
    if (approve && (how === "conversation" || how === "hour" || isWider(how))) d.scope = how;
    // Stop: this one and the others waiting are denied, and the model gets no turn.
    if (!approve && how === "stop") d.stop = true;
    setWidening(null);
    onDecide(d);
  };
  const choice = (key: string, label: string) => ({ key, label: t(`card.${label}`), hint: t(`card.${label}Hint`, { tool }) });

  // A correction asks the model to call the tool again: it never blocks it (no remember).
  const deny = (correction: Record<string, unknown>) => {
    if (disabled) return;
    setSent(true);
    const d: Decision = { approval_request_id: approval.approval_request_id, approve: false, correction };
    const r = reason.trim();
    if (r) d.reason = r;
    onDecide(d);
  };

  const title = approval.annotations?.title;
  // An admin's lock at Ask: every call asks, so only "approve once" and the denials are offered.
  const lock = approval.ask_lock ?? null;
  // The choices an admin left this tool (every one when absent); a lock narrows them further.
  // Wider than the tool (admins: a workspace default, after a confirmation; members: a link).
  const wide = widerOffer(approval, role);
  const offers = (c: ApprovalChoice) => (!approval.choices || approval.choices.includes(c))
    && !(lock && (c === "approve_conversation" || c === "approve_hour"));
  const approveChoices = [
    offers("approve_once") && choice("once", "approveOnce"), offers("approve_conversation") && choice("conversation", "approveConversation"),
    offers("approve_hour") && choice("hour", "approveHour"), !lock && offers("remember") && choice("always", "approveAlways"),
    ...wide.menu.map((w) => ({ key: w, label: t(`wider.${w}.menu`, { server }), hint: t(`wider.${w}.hint`, { server }) })),
  ].filter((c) => !!c);
  // Stop is a denial too: this one and the others waiting, and the model gets no turn.
  const stop = { key: "stop", label: t("card.stop"), hint: t("card.stopHint", { count: others.length }) };
  const denyChoices = [offers("deny") && choice("once", "denyOnce"), offers("remember") && choice("always", "denyAlways"),
    offers("deny") && stop].filter((c) => !!c);
  const limited = !!approval.choices && approval.choices.length < (lock ? 4 : 6);
  // What the card shows is what runs: a name, title or argument holding
  // bidi overrides, zero-width or other invisible characters gets a warning.
  const hiddenChars = hasHidden(approval.tool_name) || hasHidden(title ?? "") || hasHiddenDeep(approval.arguments);

  return (
    <article
      ref={ref}
      // The anchor webhook links point at (docs/webhooks.md).
      id={`approval-${approval.approval_request_id}`}
      tabIndex={-1}
      className={`approval-card${sending ? " is-busy" : ""}${timeUp ? " is-expired" : ""}`}
      aria-label={t("card.label", { tool, server })}
      aria-busy={sending || undefined}
    >
      <header className="approval-head">
        <span className="approval-eyebrow">
          <svg aria-hidden="true" viewBox="0 0 16 16" width="14" height="14"><path fill="currentColor" d="M8 1 2 3.5v4C2 11 4.6 14 8 15c3.4-1 6-4 6-7.5v-4L8 1Zm-.75 4h1.5v4.5h-1.5V5Zm0 5.5h1.5V12h-1.5v-1.5Z" /></svg>
          {t("card.eyebrow")}
        </span>
        <h2 className="approval-title">
          <code className="approval-tool"><Escaped text={approval.tool_name} /></code>
          <span className="approval-on"> {t("card.on")} </span>
          <span className="approval-server">{server}</span>
        </h2>
        {title && <p className="approval-tool-title"><Escaped text={title} /></p>}
        {hiddenChars && <p className="approval-hidden-warning" role="note">{t("card.hiddenChars")}</p>}
        <Badges a={approval.annotations} />
        <p className="approval-why">{asksBecauseText(t, approval.asks_because)}.</p>
        {lock && <p className="approval-lock"><span aria-hidden="true">🔒 </span>{t(`card.askLock.${lock}`)}</p>}
        {approval.rules && <p className="approval-rules">{rulesCheckedText(t, approval.rules)}</p>}
        {/* The definition the person approves: through Toolgate's MCP face the call runs only against it. */}
        {approval.definition_digest && (
          <p className="approval-definition">
            <Trans t={t} i18nKey="gate.cardDefinition" components={{ digest: <Digest value={approval.definition_digest} /> }} />
          </p>
        )}
        <ExpiryCountdown expiresAt={approval.expires_at} />
      </header>

      {approval.corrects && <CorrectsNote corrects={approval.corrects} />}

      {/* The admin's words for the tool: plain text, never markup. */}
      {approval.approval_text && <p className="approval-text"><Escaped text={approval.approval_text} /></p>}
      <BatchList others={others} />
      {limited && <p className="approval-limited muted small">{t("card.choicesLimited")}</p>}

      <section className="approval-args" aria-label={t("card.arguments")}>
        <h3>{t("card.arguments")}</h3>
        <JsonView value={approval.arguments} redacted={approval.redacted} />
        <RedactedNote redacted={approval.redacted} />
      </section>

      <div className="approval-options">
        <div className="approval-reason">
          <label htmlFor={`${ids}-reason`}>{t("card.reason")}</label>
          <textarea id={`${ids}-reason`} rows={2} value={reason} disabled={disabled} maxLength={2000}
            placeholder={t("card.reasonPlaceholder")}
            onChange={(e) => setReason(e.target.value)} />
        </div>
      </div>

      {error && <p className="alert error approval-error" role="alert">{error}</p>}

      <div className="approval-actions">
        {approveChoices.length === 1 ? (
          <button type="button" className="primary" disabled={disabled} title={approveChoices[0].hint}
            onClick={() => decide(true, approveChoices[0].key)}>
            {approveChoices[0].label}
          </button>
        ) : approveChoices.length > 1 && (
          <DecisionMenu label={t("card.approve")} menuLabel={t("card.approveMenu")} className="primary" disabled={disabled}
            choices={approveChoices}
            onPick={(how) => (isWider(how) ? setWidening(how) : decide(true, how))} />
        )}
        {denyChoices.length === 1 && denyChoices[0].key === "once" ? (
          <button type="button" className="danger" disabled={disabled} title={denyChoices[0].hint}
            onClick={() => decide(false, "once")}>
            {t("card.deny")}
          </button>
        ) : denyChoices.length > 0 && (
          <DecisionMenu label={t("card.deny")} menuLabel={t("card.denyMenu")} className="danger" disabled={disabled}
            choices={denyChoices}
            onPick={(how) => decide(false, how)} />
        )}
        {offers("deny_with_correction") && (
          <button type="button" disabled={disabled} aria-expanded={correcting} aria-controls={`${ids}-correction`}
            onClick={() => setCorrecting((c) => !c)}>
            {t("card.denyWithCorrection")}
          </button>
        )}
        {sending && (
          <span className="approval-busy" role="status">
            <span className="spinner" aria-hidden="true" />
            {busyText ?? t("card.sending")}
          </span>
        )}
      </div>
      {widening && (
        <WiderConfirm scope={widening} approval={approval} disabled={disabled}
          onConfirm={() => decide(true, widening)} onCancel={() => setWidening(null)} />
      )}
      <WiderLinks offer={wide} />
      <div id={`${ids}-correction`}>
        {correcting && <CorrectionPanel approval={approval} disabled={disabled} onSubmit={deny} onCancel={() => setCorrecting(false)} />}
      </div>
    </article>
  );
});
