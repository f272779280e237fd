// How each kind of transcript item looks.
import { useQuery } from "@tanstack/react-query";
import { useState, type SyntheticEvent } from "react";
import { Trans, useTranslation } from "react-i18next";
import { api } from "../api/client";
import { keys } from "../api/query";
import type { TFunction } from "i18next";
import type { AllowedBy, Approval, CallItem, GatewayCall, HookRef, ListToolsItem, Notice, TurnError } from "../api/types";
import { useFormat } from "../i18n/format";
import { Markdown } from "../markdown/Markdown";
import { linkProps } from "../router";
import { JsonView, REDACTED, RedactedNote } from "./JsonView";
import type { Outcome } from "./transcript";
import { Escaped } from "./Escaped";
import { escapedText } from "./escape";
import { OutputImages, OutputText } from "./ToolOutput";
import { Digest, DigestFull, GatewayCallView, GatewayResult } from "./GatewayCall";

export function UserMessage({ text, sending }: { text: string; sending?: boolean }) {
  const { t } = useTranslation("chat");
  return (
    <div className={`msg user${sending ? " sending" : ""}`}>
      <span className="sr-only">{t("item.youSaid")}</span>
      <div className="bubble">{text}</div>
    </div>
  );
}

export function AssistantMessage({ text, partial, streaming }: { text: string; partial?: boolean; streaming?: boolean }) {
  const { t } = useTranslation("chat");
  return (
    <div className={`msg assistant${partial ? " partial" : ""}`} aria-busy={streaming || undefined}>
      <span className="sr-only">{t("item.modelSaid")}</span>
      <div className={`assistant-body${streaming ? " streaming" : ""}`}>
        <Markdown text={text} />
      </div>
      {partial && (
        <p className="cut-short">
          <span className="badge cut-short-badge">{t("item.cutShort")}</span>{" "}
          <span className="muted">{t("item.cutShortText")}</span>
        </p>
      )}
    </div>
  );
}

function stringify(v: unknown): string {
  if (typeof v === "string") return v;
  try { return JSON.stringify(v); } catch { return String(v); }
}

/**
 * The server lists all its tools, blocked ones too (Toolgate only keeps them
 * from the model). When the list is opened, the server's tools are read (the
 * settings page shares them) and the ones blocked for the viewer get a badge;
 * if that fails (the server was removed, say) the list shows without badges.
 */
export function ListToolsRow({ item }: { item: ListToolsItem }) {
  const { t } = useTranslation("chat");
  const failed = item.list_error !== undefined && item.list_error !== null;
  const tools = item.tools ?? [];
  const [opened, setOpened] = useState(false);
  const current = useQuery({
    queryKey: keys.tools(item.server_label),
    queryFn: () => api.listTools(item.server_label),
    enabled: opened && !failed && tools.length > 0,
    retry: false,
  });
  const blocked = new Set(current.data?.filter((x) => x.effective_policy === "blocked").map((x) => x.name));
  const onToggle = (e: SyntheticEvent<HTMLDetailsElement>) => { if (e.currentTarget.open) setOpened(true); };
  const server = { server: <strong>{item.server_label}</strong> };
  return (
    <details className={`event-row list-tools${failed ? " failed" : ""}`} onToggle={onToggle}>
      <summary>
        <span className="event-icon" aria-hidden="true">{failed ? "⚠" : "☰"}</span>
        {failed
          ? <Trans t={t} i18nKey="item.listFailed" components={server} />
          : <Trans t={t} i18nKey="item.listed" count={tools.length} components={server} />}
      </summary>
      <div className="event-body">
        {failed
          ? <p className="alert error">{stringify(item.list_error)}</p>
          : (
            <ul className="tool-list">
              {tools.map((x, i) => (
                <li key={x.name ?? i}>
                  <code>{x.name !== undefined ? <Escaped text={x.name} /> : x.name}</code>
                  {x.name !== undefined && blocked.has(x.name) && (
                    <>{" "}<span className="badge blocked" title={t("item.blockedTitle")}>{t("policy.blocked")}</span></>
                  )}
                  {x.description && <span className="muted"> — {x.description}</span>}
                </li>
              ))}
            </ul>
          )}
      </div>
    </details>
  );
}

export function AllowedByLine({ allowed, server, tool }: { allowed?: AllowedBy; server: string; tool: string }) {
  const { t } = useTranslation("chat");
  const { dateTime } = useFormat();
  if (!allowed) return null;
  if (allowed.kind === "approval") return <span className="allowed-by">{t("item.allowed.approval")}</span>;
  if (allowed.kind === "conversation") return <span className="allowed-by">{t("item.allowed.conversation")}</span>;
  if (allowed.kind === "rule" && allowed.rule) {
    return <span className="allowed-by">{t("item.allowed.rule", { n: allowed.rule.index + 1, scope: t(`rules.scope.${allowed.rule.scope}`), when: allowed.rule.when })}</span>;
  }
  if (allowed.kind === "hook" && allowed.hook) {
    return <span className="allowed-by">{t("item.allowed.hook", { hook: hookName(t, allowed.hook) })}</span>;
  }
  if (allowed.kind === "grant") {
    return <span className="allowed-by">{allowed.expires_at ? t("item.allowed.grantUntil", { time: dateTime(allowed.expires_at) }) : t("item.allowed.grant")}</span>;
  }
  const policy = t(`policy.${allowed.policy ?? "never"}`);
  const source = t(`item.allowed.source.${allowed.source ?? "unknown"}`);
  return (
    <span className="allowed-by">
      <span>{t("item.allowed.policy", { policy, source })}</span>{" "}
      <a {...linkProps({ page: "settings", server, tool })} title={t("item.allowed.changeTitle", { tool, server })}>{t("item.allowed.change")}</a>
    </span>
  );
}

/** The "allowed by" of a call the face ran, or nothing when it does not say. */
function allowedBy(allowed: AllowedBy | null | undefined, server: string, tool: string) {
  return allowed ? <AllowedByLine allowed={allowed} server={server} tool={tool} /> : undefined;
}

/** "server demo" or "workspace": which decision hook answered. */
function hookName(t: TFunction<"chat">, h: HookRef): string {
  return h.scope === "server" ? t("decided.hookServer", { server: h.server_label ?? "" }) : t("decided.hookWorkspace");
}

/** The text of a tool error object as the provider sends it ({content: [{type: "text", text}]}), or its JSON. */
function errorText(err: unknown): string {
  if (typeof err === "string") return err;
  if (err && typeof err === "object") {
    const o = err as { content?: unknown; message?: unknown };
    if (Array.isArray(o.content)) {
      const texts = o.content
        .map((c) => (c && typeof c === "object" && typeof (c as { text?: unknown }).text === "string" ? (c as { text: string }).text : null))
        .filter((x): x is string => x !== null);
      if (texts.length) return texts.join("\n");
    }
    if (typeof o.message === "string") return o.message;
  }
  return JSON.stringify(err, null, 2);
}

/** "demo · delete_forecast": the server and the tool of a call. */
function CallName({ item }: { item: CallItem }) {
  const { t } = useTranslation("chat");
  return (
    <span className="call-name">
      <span className="call-server">{item.server_label}</span>
      <span aria-hidden="true"> · </span><span className="sr-only"> {t("item.tool")} </span>
      <code><Escaped text={item.name} /></code>
    </span>
  );
}

/** A call that began but never reported a result (the turn ended first): it may have run. */
function InterruptedCallRow({ item }: { item: CallItem }) {
  const { t } = useTranslation("chat");
  return (
    <div className="tool-call interrupted">
      <p className="call-head">
        <span className="event-icon" aria-hidden="true">⚙</span>
        <CallName item={item} />
        <span className="status interrupted">{t("item.statusInterrupted")}</span>
      </p>
      <p className="call-footer">{t("item.interrupted", { tool: item.name })}</p>
    </div>
  );
}

/**
 * A call Toolgate's MCP face did not run: refused ("Refused: changed since
 * you allowed it: approve again") or provably never sent to the server.
 */
function UnrunCallRow({ item, call }: { item: CallItem; call: GatewayCall }) {
  const { t } = useTranslation("chat");
  const refused = call.state === "refused";
  return (
    <div className={`tool-call ${refused ? "refused" : "not-run"}`}>
      <p className="call-head">
        <span className="event-icon" aria-hidden="true">{refused ? "⛔" : "⊘"}</span>
        <CallName item={item} />
        <span className={`status ${refused ? "refused" : "not-run"}`}>{t(refused ? "item.statusRefused" : "item.statusNotRun")}</span>
      </p>
      <div className="call-footer"><GatewayCallView call={call} /></div>
    </div>
  );
}

export function ToolCallRow({ item }: { item: CallItem }) {
  const { t } = useTranslation("chat");
  if (item.interrupted) return <InterruptedCallRow item={item} />;
  const call = item.call ?? null;
  if (call && (call.state === "refused" || call.state === "not_run")) return <UnrunCallRow item={item} call={call} />;
  // Through the face, its record says whether the call failed; else the provider's error does.
  const failed = call ? call.is_error || call.state === "failed" : item.error !== undefined && item.error !== null;
  const errType = failed && item.error && typeof item.error === "object" ? (item.error as { type?: unknown }).type : undefined;
  return (
    <div className={`tool-call${failed ? " failed" : ""}`}>
      <details>
        <summary>
          <span className="event-icon" aria-hidden="true">⚙</span>
          <CallName item={item} />
          <span className={`status ${failed ? "error" : "ok"}`}>{failed ? t("item.statusError") : t("item.statusOk")}</span>
        </summary>
        <div className="event-body">
          <h2>{t(call ? "gate.arguments" : "card.arguments")}</h2>
          {/* Through the face: the arguments it ran with and the result it stored, both redacted by the server. */}
          <JsonView value={call ? call.arguments : item.arguments} redacted={call ? call.redacted : item.redacted} />
          <RedactedNote redacted={call ? call.redacted : item.redacted} />
          {call ? (
            <>
              <h2>{t("gate.result")}</h2>
              <GatewayResult call={call} />
              <DigestFull value={call.definition_digest} />
            </>
          ) : failed ? (
            <>
              <h2>{t("item.error")}{typeof errType === "string" ? <span className="muted"> ({errType})</span> : null}</h2>
              <pre className="call-output error">{errorText(item.error)}</pre>
            </>
          ) : (
            <>
              <h2>{t("item.output")}</h2>
              <OutputText output={item.output} />
            </>
          )}
        </div>
      </details>
      {!failed && <OutputImages output={item.output} tool={item.name} />}
      {call ? (
        <div className="call-footer">
          <GatewayCallView call={call} details={false} allowedBy={allowedBy(call.allowed_by ?? item.allowed_by, item.server_label, item.name)} />
        </div>
      ) : (
        <p className="call-footer">
          <AllowedByLine allowed={item.allowed_by} server={item.server_label} tool={item.name} />
        </p>
      )}
    </div>
  );
}

type Decided = Pick<Approval, "tool_name" | "server_label" | "state" | "reason" | "remember" | "scope" | "decided_at" | "decided_by"> &
  { rules?: Approval["rules"]; correction?: Approval["correction"]; definition_digest?: Approval["definition_digest"]; call?: Approval["call"]; stopped?: Approval["stopped"] };

/** Approved first, whatever became of the call: it ran, provably did not (not_run), or may have (outcome_unknown). */
const wasApproved = (s: Decided["state"]) => s === "approved" || s === "not_run" || s === "outcome_unknown";

/**
 * What became of a request, in a few words: "approved by ana@example.com",
 * "denied by … : reason", "superseded: reason", "expired: reason". An
 * approval that did not run, or whose outcome is unknown, was approved
 * first: it says so, and DecidedApproval says what became of the call.
 */
export function decidedText(t: TFunction<"chat">, a: Pick<Decided, "state" | "reason" | "decided_by" | "rules">): string {
  const by = a.rules?.by;
  if (by === "rule" && a.rules?.rule && (wasApproved(a.state) || a.state === "denied")) {
    const r = a.rules.rule;
    const verb = a.state === "denied" ? "denied" : "approved";
    return t(`decided.${verb}ByRule${r.reason ? "Reason" : ""}`, { n: r.index + 1, scope: t(`rules.scope.${r.scope}`), when: r.when, reason: r.reason });
  }
  if (by === "policy" && a.state === "approved") return t("decided.approvedByPolicy");
  if (by === "hook" && a.rules?.hook && (wasApproved(a.state) || a.state === "denied")) {
    const h = a.rules.hook;
    const verb = a.state === "denied" ? "denied" : "approved";
    return t(`decided.${verb}ByHook${h.reason ? "Reason" : ""}`, { hook: hookName(t, h), reason: h.reason });
  }
  const after = a.state === "outcome_unknown" || a.state === "not_run";
  // Then the reason is Toolgate's explanation, which DecidedApproval says in the person's language.
  const reason = after ? undefined : a.reason ?? undefined;
  const state = after ? "approved" : a.state;
  const who = state === "approved" || state === "denied" ? a.decided_by ?? undefined : undefined;
  const key = `decided.${state}${who ? "By" : ""}${reason ? "Reason" : ""}` as const;
  return t(key, { who, reason });
}

const icons: Record<Decided["state"], string> = {
  pending: "…", approved: "✓", denied: "✕", superseded: "↷", not_run: "⊘", outcome_unknown: "?", expired: "⌛", withdrawn: "⤺",
};

/**
 * A decided request; for an approved one, whether its tool ran (see
 * outcomeOf). note: something this page has to say about it (a decision of
 * this page that was not needed, because it had been decided already).
 */
export function DecidedApproval({ approval, outcome, note }: { approval: Decided; outcome?: Outcome | "running"; note?: string }) {
  const { t } = useTranslation("chat");
  const { dateTime } = useFormat();
  const { state, remember, scope } = approval;
  const notes: string[] = [];
  const approved = wasApproved(state);
  if (approved && scope === "conversation") notes.push(t("decided.forConversation"));
  if (approved && scope === "hour") notes.push(t("decided.forHour"));
  if (approved && scope === "server") notes.push(t("decided.forServer"));
  if (approved && scope === "everything") notes.push(t("decided.forEverything"));
  if (remember && (approved || state === "denied")) notes.push(t("decided.remembered", { policy: t(approved ? "policy.never" : "policy.blocked") }));
  // The face's record, when the call reached it, says what happened: the provider's view is not needed then.
  const call = approval.call ?? null;
  const ran = state === "approved" && !call && outcome && outcome !== "not_run" && outcome !== "waiting" ? outcome : null;
  const tool = escapedText(approval.tool_name);
  return (
    <div className={`decided decided-${state}`} title={approval.decided_at ? dateTime(approval.decided_at) : undefined}>
      <span className="decided-icon" aria-hidden="true">{icons[state]}</span>
      <span className="decided-what">
        <Trans t={t} i18nKey="decided.what" components={{ tool: <code>{tool}</code>, server: <span>{approval.server_label}</span> }} />
      </span>{" "}
      <span className="decided-state">{decidedText(t, approval)}</span>
      {state === "outcome_unknown" && <span className="badge outcome-unknown">{t("decided.unknownBadge")}</span>}
      {state === "not_run" && <span className="badge not-run">{t("decided.notRunBadge")}</span>}
      {notes.map((n) => <span key={n} className="decided-note">{n}</span>)}
      {approved && approval.definition_digest && (
        <span className="decided-note decided-definition">
          <Trans t={t} i18nKey="gate.approvedDefinition" components={{ digest: <Digest value={approval.definition_digest} /> }} />
        </span>
      )}
      {state === "denied" && approval.stopped && <span className="decided-note decided-stopped">{t("decided.stopped")}</span>}
      {state === "denied" && approval.correction && <CorrectionLine correction={approval.correction} />}
      {ran && <p className={`decided-outcome outcome-${ran}`}>{t(`decided.outcome.${ran}`, { tool })}</p>}
      {state === "outcome_unknown" && <p className="decided-outcome outcome-unknown">{t("decided.outcome.outcome_unknown", { tool })}</p>}
      {state === "not_run" && <p className="decided-outcome outcome-not-run">{t("decided.outcome.not_run", { tool })}</p>}
      {call && approved && (
        <div className="decided-outcome decided-call">
          <GatewayCallView call={call} allowedBy={allowedBy(call.allowed_by, approval.server_label, approval.tool_name)} />
        </div>
      )}
      {state === "expired" && (
        <p className="decided-outcome outcome-expired">{t(approval.reason ? "decided.expiredHint" : "decided.expiredWhy", { tool })}</p>
      )}
      {note && <p className="decided-outcome decided-page-note" role="status">{note}</p>}
    </div>
  );
}

/** A denial with a correction: the arguments the model was asked to use instead (redacted as on the card). */
function CorrectionLine({ correction }: { correction: Record<string, unknown> }) {
  const { t } = useTranslation("chat");
  const parts = Object.entries(correction).map(([k, v]) => `${k}: ${v === REDACTED ? t("json.hidden") : JSON.stringify(v)}`);
  return <p className="decided-outcome decided-correction">{t("decided.correction", { args: parts.join(", ") })}</p>;
}

/** A notice the turn left in the transcript: a server left out, the conversation continued from its own transcript, … */
export function NoticeRow({ notice }: { notice: Notice }) {
  const { t } = useTranslation("chat");
  const known = ["server_skipped", "server_dropped", "provider_state_lost", "auto_follow_up_limit", "decision_hook_failed"].includes(notice.code);
  return (
    <p className={`notice-row notice-${notice.code}`}>
      <span className="event-icon" aria-hidden="true">ⓘ</span>
      <span className="sr-only">{t("item.notice")} </span>
      {known && <strong>{t(`item.noticeCode.${notice.code}`, { server: notice.server_label ?? "" })}</strong>}
      {known && " "}
      <span className={known ? "muted" : undefined}>{notice.message}</span>
    </p>
  );
}

export function TurnErrorRow({ error, onRetry, retrying, retryError }: {
  error: TurnError;
  onRetry?: () => void;
  retrying?: boolean;
  retryError?: string | null;
}) {
  const { t } = useTranslation("chat");
  const stopped = error.code === "cancelled";
  // The person stopped the batch: their own doing too, said in their language.
  const batchStopped = error.code === "stopped_by_user";
  return (
    <div className="turn-error">
      {/* Stop is the person's own doing, not a fault: shown calmly. */}
      <div className={stopped || batchStopped ? "alert info" : "alert error"}>
        {batchStopped ? <p className="turn-error-text"><strong>{t("turnError.batchStopped")}</strong> {t("turnError.batchStoppedNext")}</p> :
        <p className="turn-error-text">
          {/* Stopped: one sentence of ours, in the page's language (the server's "the turn was cancelled…" and its code said it twice). */}
          {stopped ? <><strong>{t("turnError.stopped")}</strong> {t("turnError.stoppedKept")}</> : <>
            <strong>{t("turnError.failed")}</strong> {error.message}
            <span className="turn-error-code"> ({error.code})</span>
          </>}
        </p>}
        {onRetry && (
          <div className="turn-error-actions">
            <button type="button" onClick={onRetry} disabled={retrying}>{t("turnError.retry")}</button>
            <span className="muted">{t("turnError.retryHint")}</span>
          </div>
        )}
      </div>
      {retryError && <p className="alert error" role="alert">{retryError}</p>}
    </div>
  );
}
