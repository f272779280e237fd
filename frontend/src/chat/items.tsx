// How each kind of transcript item looks.
import { useState, type SyntheticEvent } from "react";
import { api } from "../api/client";
import type { AllowedBy, Approval, CallItem, ListToolsItem, Policy, TurnError } from "../api/types";
import { Markdown } from "../markdown/Markdown";
import { linkProps } from "../router";
import { policyLabel } from "../settings/policy";
import { JsonView, RedactedNote } from "./JsonView";

export function UserMessage({ text, sending }: { text: string; sending?: boolean }) {
  return (
    <div className={`msg user${sending ? " sending" : ""}`}>
      <span className="sr-only">You said:</span>
      <div className="bubble">{text}</div>
    </div>
  );
}

export function AssistantMessage({ text, partial, streaming }: { text: string; partial?: boolean; streaming?: boolean }) {
  return (
    <div className={`msg assistant${partial ? " partial" : ""}`} aria-busy={streaming || undefined}>
      <span className="sr-only">The model answered:</span>
      <div className={`assistant-body${streaming ? " streaming" : ""}`}>
        <Markdown text={text} />
      </div>
      {partial && (
        <p className="cut-short">
          <span className="badge cut-short-badge">cut short</span>{" "}
          <span className="muted">The answer broke off here; this is the part that arrived.</span>
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
 * from the model). When the list is opened, each tool's policy for the viewer
 * is looked up as it is now, and the blocked ones get a badge; if the lookup
 * fails (the server was removed, say) the list shows without badges.
 */
export function ListToolsRow({ item }: { item: ListToolsItem }) {
  const failed = item.list_error !== undefined && item.list_error !== null;
  const tools = item.tools ?? [];
  const [policies, setPolicies] = useState<Map<string, Policy> | null>(null);
  const [asked, setAsked] = useState(false);
  const onToggle = (e: SyntheticEvent<HTMLDetailsElement>) => {
    if (!e.currentTarget.open || asked || failed || tools.length === 0) return;
    setAsked(true);
    api.listTools(item.server_label).then(
      (ts) => setPolicies(new Map(ts.map((t) => [t.name, t.effective_policy]))),
      () => { /* no badges: the list itself is still right */ },
    );
  };
  return (
    <details className={`event-row list-tools${failed ? " failed" : ""}`} onToggle={onToggle}>
      <summary>
        <span className="event-icon" aria-hidden="true">{failed ? "⚠" : "☰"}</span>
        {failed
          ? <>Could not list the tools of <strong>{item.server_label}</strong></>
          : <>Listed {tools.length} tool{tools.length === 1 ? "" : "s"} from <strong>{item.server_label}</strong></>}
      </summary>
      <div className="event-body">
        {failed
          ? <p className="alert error">{stringify(item.list_error)}</p>
          : (
            <ul className="tool-list">
              {tools.map((t) => (
                <li key={t.name}>
                  <code>{t.name}</code>
                  {policies?.get(t.name) === "blocked" && (
                    <>{" "}<span className="badge blocked" title="Blocked for you: never offered to the model">{policyLabel("blocked")}</span></>
                  )}
                  {t.description && <span className="muted"> — {t.description}</span>}
                </li>
              ))}
            </ul>
          )}
      </div>
    </details>
  );
}

const sourceText: Record<string, string> = {
  tool: "set on the tool",
  server: "server default",
  global: "global default",
  user: "your own policy",
  locked: "locked by an admin",
  conversation: "allowed for this conversation",
  unknown: "a tool Toolgate did not know",
};

export function AllowedByLine({ allowed, server, tool }: { allowed?: AllowedBy; server: string; tool: string }) {
  if (!allowed) return null;
  if (allowed.kind === "approval") return <span className="allowed-by">approved by you</span>;
  if (allowed.kind === "conversation") return <span className="allowed-by">allowed for this conversation</span>;
  return (
    <span className="allowed-by">
      <span>ran without asking (policy: {policyLabel(allowed.policy)}, {sourceText[allowed.source] ?? allowed.source})</span>{" "}
      <a {...linkProps({ page: "settings", server, tool })} title={`Change the policy of ${tool} on ${server}`}>change</a>
    </span>
  );
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

export function ToolCallRow({ item }: { item: CallItem }) {
  const failed = item.error !== undefined && item.error !== null;
  const errType = failed && item.error && typeof item.error === "object" ? (item.error as { type?: unknown }).type : undefined;
  return (
    <div className={`tool-call${failed ? " failed" : ""}`}>
      <details>
        <summary>
          <span className="event-icon" aria-hidden="true">⚙</span>
          <span className="call-name">
            <span className="call-server">{item.server_label}</span>
            <span aria-hidden="true"> · </span><span className="sr-only"> tool </span>
            <code>{item.name}</code>
          </span>
          <span className={`status ${failed ? "error" : "ok"}`}>{failed ? "error" : "ok"}</span>
        </summary>
        <div className="event-body">
          <h2>Arguments</h2>
          <JsonView value={item.arguments} redacted={item.redacted} />
          <RedactedNote redacted={item.redacted} />
          {failed ? (
            <>
              <h2>Error{typeof errType === "string" ? <span className="muted"> ({errType})</span> : null}</h2>
              <pre className="call-output error">{errorText(item.error)}</pre>
            </>
          ) : (
            <>
              <h2>Output</h2>
              <pre className="call-output">{item.output ?? ""}</pre>
            </>
          )}
        </div>
      </details>
      <p className="call-footer">
        <AllowedByLine allowed={item.allowed_by} server={item.server_label} tool={item.name} />
      </p>
    </div>
  );
}

export function DecidedApproval({ approval }: { approval: Pick<Approval, "tool_name" | "server_label" | "state" | "reason" | "remember" | "scope"> }) {
  const { state, reason, remember, scope } = approval;
  let text: string;
  const notes: string[] = [];
  if (state === "approved") {
    text = "approved by you";
    if (scope === "conversation") notes.push("allowed for this conversation");
    if (remember) notes.push(`remembered: your policy is now ${policyLabel("never")}`);
  } else if (state === "denied") {
    text = reason ? `denied: ${reason}` : "denied";
    if (remember) notes.push(`remembered: your policy is now ${policyLabel("blocked")}`);
  } else {
    text = reason ? `superseded: ${reason}` : "superseded";
  }
  return (
    <div className={`decided decided-${state}`}>
      <span className="decided-icon" aria-hidden="true">{state === "approved" ? "✓" : state === "denied" ? "✕" : "↷"}</span>
      <span className="decided-what">
        Approval request for <code>{approval.tool_name}</code> on {approval.server_label}:
      </span>{" "}
      <span className="decided-state">{text}</span>
      {notes.map((n) => <span key={n} className="decided-note">{n}</span>)}
    </div>
  );
}

export function TurnErrorRow({ error, onRetry, retrying, retryError }: {
  error: TurnError;
  onRetry?: () => void;
  retrying?: boolean;
  retryError?: string | null;
}) {
  return (
    <div className="turn-error">
      {/* Stop is the person's own doing, not a fault: shown calmly. */}
      <div className={error.code === "cancelled" ? "alert info" : "alert error"}>
        <p className="turn-error-text">
          <strong>{error.code === "cancelled" ? "Stopped." : "The response did not finish."}</strong> {error.message}
          <span className="turn-error-code"> ({error.code})</span>
        </p>
        {onRetry && (
          <div className="turn-error-actions">
            <button type="button" onClick={onRetry} disabled={retrying}>Retry</button>
            <span className="muted">Sends the last turn again.</span>
          </div>
        )}
      </div>
      {retryError && <p className="alert error" role="alert">{retryError}</p>}
    </div>
  );
}
