// The person's decisions on approval requests: a decision is sent as soon
// as nothing streams; decisions made while a response still streams wait,
// and then go together as one follow-up (one decisions stream). The server's
// answer (decision.recorded) turns a card into its decided row; a refusal
// shows on the card, which can then be decided again. Also here: moving
// focus to the card that can be decided, and how far a group of requests of
// one response has got.
import { useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useId, useRef, useState, type RefObject } from "react";
import { useTranslation } from "react-i18next";
import type { ApiError } from "../api/client";
import { keys } from "../api/query";
import type { Approval, Decision, Transcript } from "../api/types";
import { useIsAdmin } from "../auth/session";
import { ApprovalCard } from "./ApprovalCard";
import { DecidedApproval } from "./items";
import { withApprovalState, type Outcome } from "./transcript";
import { BUSY, type ChatStream } from "./useChatStream";

/** The request a 409 (approval_already_decided, approval_superseded, approval_expired) names in details.approval, as it is now. */
function approvalIn(details: unknown): Approval | null {
  const a = (details as { approval?: Partial<Approval> } | undefined)?.approval;
  return a && typeof a.approval_request_id === "string" && typeof a.state === "string" ? (a as Approval) : null;
}

export type DecisionStatus = { state: "queued" | "sending" } | { state: "error"; error: string };

interface Queued { conversationId: string; decision: Decision; approval: Approval }

export function useDecisionQueue({ start, idle }: Pick<ChatStream, "start" | "idle">) {
  const { t } = useTranslation("chat");
  const qc = useQueryClient();
  const [status, setStatus] = useState<Record<string, DecisionStatus>>({});
  const queue = useRef<Queued[]>([]);

  const mark = useCallback((ids: string[], s: DecisionStatus | null) => setStatus((cur) => {
    const next = { ...cur };
    for (const id of ids) {
      if (s) next[id] = s;
      else delete next[id];
    }
    return next;
  }), []);

  const refused = useCallback((e: ApiError, batch: Queued[]): string => {
    const a = batch[0].approval;
    return e.code === "tool_blocked" && batch.length === 1 ? t("queue.toolBlocked", { tool: a.tool_name, server: a.server_label }) : e.message;
  }, [t]);

  /** Sends what waits, once nothing streams: the decisions of one conversation in one request. */
  const flush = useCallback(async () => {
    for (;;) {
      await idle();
      const first = queue.current[0];
      if (!first) return;
      const batch = queue.current.filter((q) => q.conversationId === first.conversationId);
      queue.current = queue.current.filter((q) => q.conversationId !== first.conversationId);
      const ids = batch.map((q) => q.decision.approval_request_id);
      mark(ids, { state: "sending" });
      const r = await start({ kind: "decisions", conversationId: first.conversationId, decisions: batch.map((q) => q.decision) });
      if (r.ok) {
        // Recorded decisions are in the transcript by the end; ones that were not can be decided again.
        void r.ended.then(() => mark(ids, null));
      } else if (r.error.code === BUSY) {
        queue.current = [...batch, ...queue.current];
        mark(ids, { state: "queued" });
      } else {
        const settled = r.error.code === "approval_already_decided" || r.error.code === "approval_superseded" ||
          r.error.code === "approval_expired";
        // Decided elsewhere (another tab, another client) or closed: the card shows the request as it is now.
        const current = settled ? approvalIn(r.error.details) : null;
        if (current) {
          qc.setQueryData<Transcript>(keys.conversation(first.conversationId), (tr) => (tr ? withApprovalState(tr, current) : tr));
          mark([current.approval_request_id], { state: "error", error: t("queue.notRecorded") });
        }
        const rest = current ? ids.filter((id) => id !== current.approval_request_id) : ids;
        mark(rest, { state: "error", error: r.aborted ? t("queue.stopped") : refused(r.error, batch) });
        if (settled) void qc.invalidateQueries({ queryKey: keys.conversation(first.conversationId), exact: true });
      }
    }
  }, [idle, start, mark, refused, t, qc]);

  const decide = useCallback((approval: Approval, d: Decision) => {
    const id = d.approval_request_id;
    if (queue.current.some((q) => q.decision.approval_request_id === id)) return; // never twice
    queue.current.push({ conversationId: approval.conversation_id, decision: d, approval });
    mark([id], { state: "queued" });
    if (queue.current.length === 1) void flush();
  }, [flush, mark]);

  /** Approve all / Deny all: every decision goes in one request, so the model gets one follow-up. */
  const decideAll = useCallback((all: { approval: Approval; decision: Decision }[]) => {
    const fresh = all.filter(({ decision: d }) => !queue.current.some((q) => q.decision.approval_request_id === d.approval_request_id));
    if (fresh.length === 0) return;
    const wasEmpty = queue.current.length === 0;
    for (const { approval, decision } of fresh) queue.current.push({ conversationId: approval.conversation_id, decision, approval });
    mark(fresh.map((f) => f.decision.approval_request_id), { state: "queued" });
    if (wasEmpty) void flush();
  }, [flush, mark]);

  return { status, decide, decideAll };
}

/**
 * Focuses a card that just appeared; when it is taller than the room for it
 * (a phone, long arguments), its top is shown: the tool it asks about comes
 * before the buttons that decide it.
 */
function showCard(card: HTMLElement) {
  card.focus();
  const box = card.closest(".chat-scroll")?.getBoundingClientRect();
  if (box && card.getBoundingClientRect().top < box.top) card.scrollIntoView({ block: "start" });
}

/**
 * Focus: a new request that can be decided gets it (the first one); when the
 * card that had it is decided, the next card does, or the composer. A link
 * to one request (linked, a webhook's "#approval-mcpr_…") focuses that card
 * when it appears; when it names a decided request, the cards the page opens
 * with leave focus where Transcript put it (on the decided one).
 */
export function useCardFocus(actionable: string[], fallback: RefObject<{ focus(): void } | null>, linked?: string) {
  const cards = useRef(new Map<string, HTMLElement>());
  const seen = useRef(new Set<string>());
  const before = useRef(0);
  const key = actionable.join(" ");
  useEffect(() => {
    const ids = key ? key.split(" ") : [];
    const opening = seen.current.size === 0;
    const fresh = ids.filter((id) => !seen.current.has(id));
    fresh.forEach((id) => seen.current.add(id));
    const first = ids.length ? cards.current.get(ids[0]) : undefined;
    const lost = document.activeElement === document.body || document.activeElement === null;
    if (fresh.length && linked && fresh.includes(linked) && cards.current.has(linked)) showCard(cards.current.get(linked)!);
    else if (fresh.length && first && !(opening && linked)) showCard(first);
    else if (lost && ids.length < before.current) (first ?? fallback.current)?.focus();
    before.current = ids.length;
  }, [key, fallback, linked]);
  return useCallback((id: string) => (el: HTMLElement | null) => {
    if (el) cards.current.set(id, el);
    else cards.current.delete(id);
  }, []);
}

export interface Group {
  total: number;
  decided: number;
  /** The requests of the response still pending. */
  pending: Approval[];
}

/** Approve all / Deny all (with one reason) for the pending requests of one response. */
function DecideAll({ pending, onDecideAll }: { pending: Approval[]; onDecideAll(all: { approval: Approval; decision: Decision }[]): void }) {
  const { t } = useTranslation("chat");
  const [reason, setReason] = useState("");
  const [sent, setSent] = useState(false);
  const id = useId();
  const all = (approve: boolean) => {
    if (sent) return;
    setSent(true);
    const r = reason.trim();
    onDecideAll(pending.map((a) => {
      const decision: Decision = { approval_request_id: a.approval_request_id, approve };
      if (!approve && r) decision.reason = r;
      return { approval: a, decision };
    }));
  };
  return (
    <div className="approval-all" role="group" aria-label={t("queue.allLabel", { count: pending.length })}>
      <label htmlFor={`${id}-reason`}>{t("queue.allReason")}</label>
      <input id={`${id}-reason`} type="text" value={reason} maxLength={2000} disabled={sent} onChange={(e) => setReason(e.target.value)} />
      <button type="button" className="primary" disabled={sent} onClick={() => all(true)}>{t("queue.approveAll", { count: pending.length })}</button>
      <button type="button" className="danger" disabled={sent} onClick={() => all(false)}>{t("queue.denyAll", { count: pending.length })}</button>
    </div>
  );
}

function Progress({ group }: { group: Group }) {
  const { t } = useTranslation("chat");
  return (
    <p className="approval-progress">
      <span className="progress-dots" aria-hidden="true">
        {Array.from({ length: group.total }, (_, i) => <span key={i} className={i < group.decided ? "done" : ""} />)}
      </span>
      {group.decided === 0 ? t("queue.groupWaiting", { count: group.total }) : t("queue.groupProgress", { decided: group.decided, total: group.total })}
    </p>
  );
}

/** One approval request in the transcript: the card while pending, else the decision (and whether the tool ran). */
export function ApprovalSlot({ approval, outcome, status, statuses, blocked, group, others, onDecide, onDecideAll, cardRef, linked }: {
  approval: Approval;
  /** A link names this request (a webhook's): it is highlighted. */
  linked?: boolean;
  outcome: Outcome | "running";
  status?: DecisionStatus;
  /** Every request's status, for Approve all / Deny all. */
  statuses?: Record<string, DecisionStatus>;
  /** A turn this page does not stream runs: decisions would be refused. */
  blocked: boolean;
  /** Shown under the last request of a response that asked several. */
  group?: Group;
  /** The other requests of the same response still waiting (shown on the card; Stop denies them too). */
  others?: readonly Approval[];
  onDecide(a: Approval, d: Decision): void;
  /** Decisions on several requests, sent in one request. */
  onDecideAll?(all: { approval: Approval; decision: Decision }[]): void;
  cardRef(el: HTMLElement | null): void;
}) {
  const { t } = useTranslation("chat");
  const admin = useIsAdmin();
  // Offered while more than one request of the response waits and none of them is being sent.
  const sending = (a: Approval) => { const s = statuses?.[a.approval_request_id]?.state; return s === "queued" || s === "sending"; };
  const open = group?.pending.filter((a) => !sending(a)) ?? [];
  const bulk = onDecideAll && !blocked && group && group.pending.length > 1 && open.length === group.pending.length
    // Keyed by the requests: a new set of them starts with a fresh reason.
    ? <DecideAll key={open.map((a) => a.approval_request_id).join(" ")} pending={open} onDecideAll={onDecideAll} /> : null;
  const progress = group && group.total > 1 && group.decided < group.total ? <>{bulk}<Progress group={group} /></> : null;
  if (approval.state !== "pending") {
    const note = status?.state === "error" ? status.error : undefined;
    // The id a link names ("#approval-mcpr_…"), as the pending card has it.
    return (
      <>
        <div id={`approval-${approval.approval_request_id}`} tabIndex={-1} className={`decided-slot${linked ? " is-linked" : ""}`}>
          <DecidedApproval approval={approval} outcome={outcome} note={note} />
        </div>
        {progress}
      </>
    );
  }
  const st = status?.state;
  const busy = blocked || st === "queued" || st === "sending";
  const busyText = blocked ? t("queue.blocked") : st === "queued" ? t("queue.queued") : t("card.sending");
  return (
    <>
      <ApprovalCard ref={cardRef} approval={approval} busy={busy} busyText={busyText} role={admin ? "admin" : "member"}
        error={status?.state === "error" ? status.error : undefined} others={others} onDecide={(d) => onDecide(approval, d)} />
      {progress}
    </>
  );
}
