// The conversation: the stored transcript, what the live turn adds that is
// not stored yet (the message being sent, answer text streaming), and what
// runs now. Keeps the newest content in view while the person is at the
// bottom.
import { useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { useTranslation } from "react-i18next";
import type { Approval, Decision, Item, Transcript as TranscriptData } from "../api/types";
import { useFormat } from "../i18n/format";
import { ApprovalSlot, type DecisionStatus, type Group } from "./DecisionQueue";
import { othersInBatch } from "./BatchList";
import { AssistantMessage, ListToolsRow, NoticeRow, ToolCallRow, TurnErrorRow, UserMessage } from "./items";
import { outcomeOf, type RunningCall } from "./transcript";
import type { LiveTurn } from "./useChatStream";

type Row =
  | { kind: "item"; key: string; item: Item }
  | { kind: "approval"; key: string; approval: Approval }
  | { kind: "pending_user"; key: string; text: string }
  | { kind: "text"; key: string; text: string };

const shown = new Set<Item["type"]>(["user_message", "message", "mcp_list_tools", "mcp_call", "error", "notice"]);

/** The rows to show, and for each response that asked several requests, how far they are decided. */
export function buildRows(tr: TranscriptData | undefined, turn: LiveTurn | null) {
  const rows: Row[] = [];
  const groups = new Map<string, Group & { last: string }>();
  const approval = (a: Approval) => {
    const key = `a-${a.approval_request_id}`;
    rows.push({ kind: "approval", key, approval: a });
    const g = groups.get(a.response_id) ?? { total: 0, decided: 0, pending: [], last: key };
    groups.set(a.response_id, { total: g.total + 1, decided: g.decided + (a.state === "pending" ? 0 : 1),
      pending: a.state === "pending" ? [...g.pending, a] : g.pending, last: key });
  };
  const itemIds = new Set<string>();
  for (const it of tr?.items ?? []) {
    if (it.id) itemIds.add(it.id);
    if (it.type === "mcp_approval_request") approval(it.approval);
    else if (shown.has(it.type)) rows.push({ kind: "item", key: `i-${it.id ?? it.seq}`, item: it });
  }
  // Pending requests the items do not hold (they should): still decidable.
  for (const a of tr?.pending_approvals ?? []) if (!itemIds.has(a.approval_request_id)) approval(a);
  if (turn?.pendingInput != null) rows.push({ kind: "pending_user", key: "pending-user", text: turn.pendingInput });
  for (const x of turn?.texts ?? []) if (!itemIds.has(x.itemId)) rows.push({ kind: "text", key: `i-${x.itemId}`, text: x.text });
  return { rows, groups };
}

/** Now, once a second, from `since` on. */
function useElapsed(since: number): number {
  const [now, setNow] = useState(since);
  useEffect(() => {
    const h = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(h);
  }, []);
  return Math.max(0, Math.floor((now - since) / 1000));
}

function Running({ calls }: { calls: RunningCall[] }) {
  const { t } = useTranslation("chat");
  const { number } = useFormat();
  const secs = useElapsed(Math.min(...calls.map((c) => c.since)));
  return (
    <>
      <span>{t("status.running", { tools: calls.map((c) => c.tool).join(", ") })}</span>{" "}
      <span className="elapsed" aria-hidden="true">{t("status.seconds", { seconds: number(secs) })}</span>
    </>
  );
}

export interface TranscriptProps {
  transcript: TranscriptData | undefined;
  /** The live turn when it belongs to this conversation: this page's, or one followed on the events stream. */
  turn: LiveTurn | null;
  /** A turn runs that this page did not start (another tab, a reload): decisions and Retry wait for it. */
  serverStreaming: boolean;
  stopping: boolean;
  status: Record<string, DecisionStatus>;
  onDecide(a: Approval, d: Decision): void;
  /** Approve all / Deny all: decisions on several requests in one request. */
  onDecideAll?(all: { approval: Approval; decision: Decision }[]): void;
  cardRef(id: string): (el: HTMLElement | null) => void;
  /** The request a link names (a webhook's "#approval-mcpr_…"): scrolled into view, focused and highlighted once shown. */
  linked?: string;
  onRetry(): void;
  retryError: string | null;
  /** Shown before the rows: the empty state, loading, errors. */
  children?: ReactNode;
  /** Shown after them: notices. */
  footer?: ReactNode;
}

export function Transcript(p: TranscriptProps) {
  const { t } = useTranslation("chat");
  const { transcript: tr, turn } = p;
  const { rows, groups } = useMemo(() => buildRows(tr, turn), [tr, turn]);
  const live = turn !== null && turn.phase !== "ended";
  const lastItem = tr?.items[tr.items.length - 1];

  // ---- keep the newest content in view while the person is at the bottom ----
  const scrollRef = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const request = useRef<LiveTurn["request"] | null>(null);
  useLayoutEffect(() => {
    const el = scrollRef.current;
    if (turn && turn.request !== request.current) stick.current = true; // the person just sent something
    request.current = turn?.request ?? null;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [rows, turn]);
  // A link to one request: once its row is there, it is brought into view (once per link), and the
  // transcript stops following the bottom so that it stays there.
  const jumped = useRef<string | null>(null);
  const linked = p.linked;
  const linkedShown = linked !== undefined && rows.some((r) => r.kind === "approval" && r.approval.approval_request_id === linked);
  useEffect(() => {
    if (!linked || !linkedShown || jumped.current === linked) return;
    const el = document.getElementById(`approval-${linked}`);
    if (!el) return;
    jumped.current = linked;
    stick.current = false;
    el.scrollIntoView?.({ block: "center" });
    el.focus({ preventScroll: true });
  }, [linked, linkedShown]);
  const onScroll = () => {
    const el = scrollRef.current;
    if (el) stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  };

  const running = live ? turn.running : [];
  const runningIds = new Set(running.flatMap((r) => (r.approvalId ? [r.approvalId] : [])));
  const renderRow = (r: Row): ReactNode => {
    switch (r.kind) {
      case "pending_user": return <UserMessage key={r.key} text={r.text} sending />;
      case "text": return <AssistantMessage key={r.key} text={r.text} streaming={live} />;
      case "approval": {
        const a = r.approval;
        const id = a.approval_request_id;
        const g = groups.get(a.response_id);
        return (
          <ApprovalSlot key={r.key} approval={a} outcome={runningIds.has(id) ? "running" : outcomeOf(tr!, a)}
            status={p.status[id]} statuses={p.status} blocked={p.serverStreaming} group={g && g.last === r.key ? g : undefined}
            others={g && a.state === "pending" ? othersInBatch(a, g.pending) : undefined}
            onDecide={p.onDecide} onDecideAll={p.onDecideAll} cardRef={p.cardRef(id)} linked={id === linked} />
        );
      }
      case "item": {
        const it = r.item;
        switch (it.type) {
          case "user_message": return <UserMessage key={r.key} text={it.text} />;
          case "message": return <AssistantMessage key={r.key} text={it.text} partial={it.partial} />;
          case "mcp_list_tools": return <ListToolsRow key={r.key} item={it} />;
          case "mcp_call": return <ToolCallRow key={r.key} item={it} />;
          case "notice": return <NoticeRow key={r.key} notice={it.notice} />;
          case "error": {
            const last = lastItem?.seq === it.seq;
            const canRetry = it.turn_error.retryable && last && !live && !p.serverStreaming;
            return (
              <TurnErrorRow key={r.key} error={it.turn_error} onRetry={canRetry ? p.onRetry : undefined}
                retrying={live} retryError={last ? p.retryError : null} />
            );
          }
          default: return null;
        }
      }
    }
  };

  const lastRow = rows[rows.length - 1];
  // A turn followed live shows like this page's own; one not followed (yet) only says that it runs.
  const working = live ? lastRow?.kind !== "text" || running.length > 0 : p.serverStreaming;
  return (
    <div className="chat-scroll" ref={scrollRef} onScroll={onScroll}>
      <div className="transcript">
        {p.children}
        {rows.map(renderRow)}
        {working && (
          <div className="typing" role="status">
            <span className="dots" aria-hidden="true"><span /><span /><span /></span>
            <span className="typing-text">
              {p.serverStreaming && !live ? t("status.elsewhere")
                : p.stopping ? t("status.stopping")
                : running.length ? <Running calls={running} />
                : t("status.working")}
            </span>
          </div>
        )}
        {p.footer}
      </div>
    </div>
  );
}
