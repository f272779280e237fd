// The chat: conversations on the left, the transcript with its live turn, and
// the composer. The server owns the conversation; this page reloads it after
// every turn and keeps only the running turn itself.
import { useCallback, useEffect, useLayoutEffect, useMemo, useReducer, useRef, useState, type ReactNode } from "react";
import { api, type ApiError } from "../api/client";
import type { Approval, Decision, Info, Item, Transcript, TurnError } from "../api/types";
import { navigate } from "../router";
import { ApprovalCard } from "./ApprovalCard";
import { AssistantMessage, DecidedApproval, ListToolsRow, ToolCallRow, TurnErrorRow, UserMessage } from "./items";
import { Sidebar, titleOf } from "./Sidebar";
import { useChatStream, type LiveTurn } from "./useChatStream";
import "./chat.css";

interface View {
  id: string;
  transcript: Transcript | null;
  loading: boolean;
  error?: ApiError;
}

type DecisionStatus = { state: "queued" | "sending" | "sent" } | { state: "error"; error: string };

type Row =
  | { kind: "item"; key: string; item: Item }
  | { kind: "pending_user"; key: string; text: string }
  | { kind: "text"; key: string; text: string }
  | { kind: "approval"; key: string; approval: Approval; live: boolean }
  | { kind: "turn_error"; key: string; error: TurnError };

function decisionErrorText(e: ApiError, a?: Approval): string {
  if (e.code === "tool_blocked" && a) {
    return `${a.tool_name} on ${a.server_label} was blocked after it asked (its policy changed, or its server was disabled or removed), so it cannot simply be approved. Deny it, or tick “Remember for this tool” and approve to allow it from now on.`;
  }
  return e.message;
}

function Suggestion({ text, onPick }: { text: string; onPick(t: string): void }) {
  return (
    <li><button type="button" className="suggestion" onClick={() => onPick(text)}><code>{text}</code></button></li>
  );
}

function EmptyState({ offline, onPick }: { offline: boolean; onPick(t: string): void }) {
  return (
    <div className="chat-empty">
      <h2>Chat with tools, under your control</h2>
      <p>
        The model can call the tools of your MCP servers. Toolgate runs the ones you allow, asks you before
        the ones set to <em>Ask</em>, and never runs the blocked ones.
      </p>
      {offline && (
        <>
          <p className="muted">This is the offline demo: an emulated model calls a demo tool when your message names it. Try:</p>
          <ul className="suggestions">
            <Suggestion text="list_forecasts" onPick={onPick} />
            <Suggestion text={'delete_forecast {"city": "Oslo"}'} onPick={onPick} />
            <Suggestion text={'get_forecast {"city": "Berlin"} delete_forecast {"city": "Lisbon"}'} onPick={onPick} />
          </ul>
        </>
      )}
    </div>
  );
}

export function ChatPage({ conversationId }: { conversationId?: string }) {
  const [info, setInfo] = useState<Info | null>(null);
  const [listVersion, bumpList] = useReducer((x: number) => x + 1, 0);
  const [view, setView] = useState<View | null>(null);
  const [draft, setDraft] = useState("");
  const [composerError, setComposerError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [retryError, setRetryError] = useState<string | null>(null);
  const [reloadError, setReloadError] = useState<string | null>(null);
  const [reloading, setReloading] = useState(false);
  const [decisionStatus, setDecisionStatus] = useState<Record<string, DecisionStatus>>({});
  const [announcement, setAnnouncement] = useState("");

  const currentId = useRef(conversationId);
  const reloadingRef = useRef(false);
  const queue = useRef<Decision[]>([]);
  const inflight = useRef(new Set<string>());
  const announced = useRef(new Set<string>());
  const focusedCards = useRef(new Set<string>());
  const cardRefs = useRef(new Map<string, HTMLElement>());
  const composerRef = useRef<HTMLTextAreaElement>(null);
  const scrollRef = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const approvalsById = useRef(new Map<string, Approval>());

  useEffect(() => { api.info().then(setInfo, () => setInfo(null)); }, []);

  /** Reads the conversation from the server; the view shows what it says. */
  const reload = useCallback(async (id: string): Promise<Transcript | null> => {
    try {
      const tr = await api.conversation(id);
      if (currentId.current === id) {
        setView({ id, transcript: tr, loading: false });
        setReloadError(null);
      }
      return tr;
    } catch (err) {
      if (currentId.current === id) {
        const e = err as ApiError;
        if (e.status === 404) setView({ id, transcript: null, loading: false, error: e });
        else setReloadError(e.message);
      }
      return null;
    }
  }, []);

  const stream = useChatStream({
    onConversation: (id) => {
      bumpList();
      // A new conversation: its address, without leaving the stream.
      if (currentId.current === undefined) {
        currentId.current = id;
        navigate({ page: "chat", conversationId: id }, { replace: true });
      }
    },
    onEnd: (turn: LiveTurn) => { void afterTurn(turn); },
  });

  const afterTurn = async (turn: LiveTurn) => {
    bumpList();
    const id = turn.conversationId;
    if (turn.cut === "broken") {
      setNotice("The connection to Toolgate ended before the response finished. The conversation below is what the server has stored.");
    }
    const t = turn.terminal;
    if (t?.event === "completed") {
      const n = t.data.pending_approvals;
      if (n === 0 && t.data.sent) setAnnouncement("The model answered.");
      else if (!t.data.sent && n > 0) setAnnouncement(`Decision recorded. ${n} more to decide before the model continues.`);
    } else if (t) {
      setAnnouncement(`The response did not finish: ${t.data.message}`);
    }
    if (!id || id !== currentId.current || turn.cut === "detached") { stream.clear(turn.no); return; }
    reloadingRef.current = true;
    setReloading(true);
    const tr = await reload(id);
    reloadingRef.current = false;
    setReloading(false);
    if (tr) {
      stream.clear(turn.no);
      // What was sent is now in the transcript: the cards say what the server says.
      setDecisionStatus((s) => {
        const next: Record<string, DecisionStatus> = {};
        for (const [k, v] of Object.entries(s)) {
          if (v.state === "sent") inflight.current.delete(k);
          else next[k] = v;
        }
        return next;
      });
    }
  };

  // Switching conversations: load the transcript, leave a stream of another one.
  useEffect(() => {
    const t = stream.current();
    const running = t !== null && t.phase !== "ended";
    const own = running && t.conversationId !== null && t.conversationId === conversationId;
    currentId.current = conversationId;
    if (running && !own) stream.detach();
    if (own && t.request.kind === "message" && !t.request.conversationId) {
      // Our own stream just created this conversation: it shows the turn; reload after it.
      setView({ id: conversationId!, transcript: null, loading: false });
      return;
    }
    setDecisionStatus({});
    queue.current = [];
    inflight.current.clear();
    announced.current.clear();
    focusedCards.current.clear();
    stream.resetRecorded();
    setNotice(null);
    setComposerError(null);
    setRetryError(null);
    setReloadError(null);
    setDraft("");
    stick.current = true;
    if (!conversationId) {
      setView(null);
      composerRef.current?.focus();
      return;
    }
    setView((v) => (v?.id === conversationId ? { ...v, loading: true } : { id: conversationId, transcript: null, loading: true }));
    let alive = true;
    api.conversation(conversationId).then(
      (tr) => { if (alive) setView({ id: conversationId, transcript: tr, loading: false }); },
      (err: ApiError) => { if (alive) setView({ id: conversationId, transcript: null, loading: false, error: err }); },
    );
    return () => { alive = false; };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [conversationId]);

  const transcript = view && view.id === conversationId ? view.transcript : null;
  const turn = stream.turn;
  const liveHere = turn !== null && (turn.conversationId ?? undefined) === conversationId;
  const running = stream.running;
  const serverStreaming = !!transcript?.conversation.streaming && !(running && liveHere);

  // A turn that runs without our stream (the page was reloaded, or another tab): poll until it ends.
  useEffect(() => {
    if (!serverStreaming || !conversationId) return;
    const h = setInterval(() => {
      void reload(conversationId).then((tr) => { if (tr && !tr.conversation.streaming) bumpList(); });
    }, 1500);
    return () => clearInterval(h);
  }, [serverStreaming, conversationId, reload]);

  // ---- rows: the stored transcript, then what the live turn added ----
  const recorded = stream.recorded;
  const rows = useMemo(() => {
    const out: Row[] = [];
    const items = transcript?.items ?? [];
    const seqs = new Set<number>();
    const approvalIds = new Set<string>();
    for (const it of items) {
      seqs.add(it.seq);
      if (it.type === "mcp_approval_request") {
        approvalIds.add(it.approval.approval_request_id);
        out.push({ kind: "approval", key: `a-${it.approval.approval_request_id}`, approval: it.approval, live: false });
      } else if (["user_message", "message", "mcp_list_tools", "mcp_call", "error"].includes(it.type)) {
        out.push({ kind: "item", key: `i-${it.seq}`, item: it });
      }
    }
    // Pending requests the items do not hold (they should): still decidable.
    for (const a of transcript?.pending_approvals ?? []) {
      if (!approvalIds.has(a.approval_request_id)) {
        approvalIds.add(a.approval_request_id);
        out.push({ kind: "approval", key: `a-${a.approval_request_id}`, approval: a, live: false });
      }
    }
    if (turn && liveHere) {
      for (const e of turn.entries) {
        if (e.type === "pending_user") out.push({ kind: "pending_user", key: e.key, text: e.text });
        else if (e.type === "text") out.push({ kind: "text", key: e.key, text: e.text });
        else if (e.type === "item" && !seqs.has(e.item.seq)) out.push({ kind: "item", key: `i-${e.item.seq}`, item: e.item });
        else if (e.type === "approval" && !approvalIds.has(e.approval.approval_request_id)) {
          out.push({ kind: "approval", key: `a-${e.approval.approval_request_id}`, approval: e.approval, live: true });
        }
      }
      // Shown only until the transcript (with its error item) is back.
      if (turn.phase === "ended" && turn.terminal && turn.terminal.event !== "completed") {
        const d = turn.terminal.data;
        out.push({ kind: "turn_error", key: `t-${turn.no}`, error: { code: d.code, message: d.message, retryable: "retryable" in d ? d.retryable : false } });
      }
    }
    return out;
  }, [transcript, turn, liveHere]);

  const effective = useCallback((a: Approval): Approval => {
    const r = recorded[a.approval_request_id];
    return r ? { ...a, state: r.state, reason: r.reason, remember: r.remember, scope: r.scope } : a;
  }, [recorded]);

  const approvals = rows.filter((r): r is Extract<Row, { kind: "approval" }> => r.kind === "approval");
  const pending = approvals.filter((r) => effective(r.approval).state === "pending");
  const notYet = (r: { live: boolean }) => (r.live && running) || serverStreaming;
  const actionable = pending.filter((r) => !notYet(r));
  approvalsById.current = new Map(approvals.map((r) => [r.approval.approval_request_id, r.approval]));

  // Several requests of one response: how many are decided.
  const groups = new Map<string, { total: number; decided: number; last: string }>();
  for (const r of approvals) {
    const k = r.approval.response_id;
    const cur = groups.get(k) ?? { total: 0, decided: 0, last: r.key };
    cur.total++;
    if (effective(r.approval).state !== "pending") cur.decided++;
    cur.last = r.key;
    groups.set(k, cur);
  }

  // ---- deciding: one decisions stream per decision, one after the other ----
  const pump = useCallback(() => {
    const id = currentId.current;
    if (!id || stream.isRunning() || reloadingRef.current) return;
    const d = queue.current.shift();
    if (!d) return;
    const rid = d.approval_request_id;
    setDecisionStatus((s) => ({ ...s, [rid]: { state: "sending" } }));
    void stream.start({ kind: "decisions", conversationId: id, decisions: [d] }).then((r) => {
      if (r.ok) {
        setDecisionStatus((s) => ({ ...s, [rid]: { state: "sent" } }));
        return;
      }
      inflight.current.delete(rid);
      const msg = r.aborted ? "Stopped before the decision was sent." : decisionErrorText(r.error, approvalsById.current.get(rid));
      setDecisionStatus((s) => ({ ...s, [rid]: { state: "error", error: msg } }));
      if (r.error.code === "approval_already_decided" || r.error.code === "approval_superseded") void reload(id);
      pump();
    });
  }, [stream, reload]);

  useEffect(() => {
    if (!running && !reloading) pump();
  }, [running, reloading, pump]);

  const decide = useCallback((d: Decision) => {
    const rid = d.approval_request_id;
    if (inflight.current.has(rid)) return; // never twice
    inflight.current.add(rid);
    queue.current.push(d);
    setDecisionStatus((s) => ({ ...s, [rid]: { state: "queued" } }));
    pump();
  }, [pump]);

  // ---- announce new requests; move focus to the first card that can be decided ----
  const pendingKey = pending.map((r) => r.approval.approval_request_id).join(" ");
  const actionableKey = actionable.map((r) => r.approval.approval_request_id).join(" ");
  const prevActionable = useRef(0);
  useEffect(() => {
    const fresh = pending.filter((r) => !announced.current.has(r.approval.approval_request_id));
    if (fresh.length) {
      fresh.forEach((r) => announced.current.add(r.approval.approval_request_id));
      setAnnouncement(fresh.map((r) => `Approval needed: ${r.approval.tool_name} on ${r.approval.server_label}`).join(". "));
    }
    const newCards = actionable.filter((r) => !focusedCards.current.has(r.approval.approval_request_id));
    newCards.forEach((r) => focusedCards.current.add(r.approval.approval_request_id));
    const first = actionable[0] && cardRefs.current.get(actionable[0].approval.approval_request_id);
    const lost = document.activeElement === document.body || document.activeElement === null;
    if (newCards.length && first) {
      first.focus();
    } else if (lost && actionable.length < prevActionable.current) {
      // The card with focus was decided: on to the next one, or back to the composer.
      (first ?? composerRef.current)?.focus();
    }
    prevActionable.current = actionable.length;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [pendingKey, actionableKey]);

  // ---- keep the newest content in view while the person is at the bottom ----
  useLayoutEffect(() => {
    const el = scrollRef.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [rows, running]);
  const onScroll = () => {
    const el = scrollRef.current;
    if (el) stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  };

  // ---- sending ----
  const busy = running || serverStreaming;
  const canSend = draft.trim() !== "" && !busy;
  const submit = async () => {
    if (!canSend) return;
    const text = draft;
    setDraft("");
    setComposerError(null);
    setNotice(null);
    setRetryError(null);
    stick.current = true;
    const r = await stream.start({ kind: "message", input: text, conversationId });
    if (!r.ok) {
      if (!r.aborted) setComposerError(r.error.message);
      setDraft((d) => d || text); // nothing was sent: give the text back
    }
  };

  const retry = async () => {
    if (!conversationId || busy) return;
    setRetryError(null);
    setNotice(null);
    stick.current = true;
    const r = await stream.start({ kind: "retry", conversationId });
    if (!r.ok && !r.aborted) setRetryError(r.error.message);
  };

  const stop = async () => {
    if (running) { await stream.stop(); return; }
    if (serverStreaming && conversationId) {
      try { await api.cancel(conversationId); } catch { /* it ended meanwhile */ }
      void reload(conversationId);
    }
  };

  const pick = (t: string) => {
    setDraft(t);
    requestAnimationFrame(() => composerRef.current?.focus());
  };

  // The composer grows with its text, up to a limit.
  useLayoutEffect(() => {
    const el = composerRef.current;
    if (!el) return;
    el.style.height = "auto";
    el.style.height = `${Math.min(el.scrollHeight + 2, 220)}px`;
  }, [draft]);

  // ---- render ----
  const lastItem = transcript?.items[transcript.items.length - 1];
  const renderRow = (r: Row): ReactNode => {
    switch (r.kind) {
      case "pending_user":
        return <UserMessage key={r.key} text={r.text} sending />;
      case "text":
        return <AssistantMessage key={r.key} text={r.text} streaming={running} />;
      case "turn_error":
        return <TurnErrorRow key={r.key} error={r.error} />;
      case "approval": {
        const a = effective(r.approval);
        const id = a.approval_request_id;
        const group = groups.get(a.response_id);
        let progress: ReactNode = null;
        if (group && group.total > 1 && group.last === r.key && group.decided < group.total) {
          progress = (
            <p className="approval-progress" key={`${r.key}-progress`}>
              <span className="progress-dots" aria-hidden="true">
                {Array.from({ length: group.total }, (_, i) => <span key={i} className={i < group.decided ? "done" : ""} />)}
              </span>
              {group.decided === 0
                ? `${group.total} requests wait for your decision. The model continues once all are decided.`
                : `${group.decided} of ${group.total} decided — waiting for the rest`}
            </p>
          );
        }
        if (a.state !== "pending") return [<DecidedApproval key={r.key} approval={a} />, progress];
        const st = decisionStatus[id];
        const waiting = notYet(r);
        const cardBusy = waiting || st?.state === "queued" || st?.state === "sending" || st?.state === "sent";
        const busyText = waiting ? "You can decide once the model's response has finished…"
          : st?.state === "queued" ? "Queued: sent when the previous decision is through…"
          : "Sending your decision…";
        return [
          <ApprovalCard
            key={r.key}
            ref={(el: HTMLElement | null) => { if (el) cardRefs.current.set(id, el); else cardRefs.current.delete(id); }}
            approval={a}
            busy={cardBusy}
            busyText={busyText}
            error={st?.state === "error" ? st.error : undefined}
            onDecide={decide}
          />,
          progress,
        ];
      }
      case "item": {
        const it = r.item;
        switch (it.type) {
          case "user_message": return <UserMessage key={r.key} text={it.text} />;
          case "message": return <AssistantMessage key={r.key} text={it.text} partial={it.partial} />;
          case "mcp_list_tools": return <ListToolsRow key={r.key} item={it} />;
          case "mcp_call": return <ToolCallRow key={r.key} item={it} />;
          case "error": {
            const canRetry = it.turn_error.retryable && lastItem?.seq === it.seq && !(running && liveHere);
            return (
              <TurnErrorRow key={r.key} error={it.turn_error}
                onRetry={canRetry ? () => void retry() : undefined}
                retrying={busy} retryError={lastItem?.seq === it.seq ? retryError : null} />
            );
          }
          default: return null;
        }
      }
    }
  };

  const lastRow = rows[rows.length - 1];
  const typing = (running && liveHere && lastRow?.kind !== "text") || serverStreaming;
  const title = transcript ? titleOf(transcript.conversation) : !conversationId || (turn && liveHere) ? "New chat" : "";
  const isEmpty = !conversationId && !(turn && liveHere);

  return (
    <div className="chat-page">
      <Sidebar currentId={conversationId} version={listVersion} onChanged={bumpList} />
      <section className="chat-main" aria-label="Chat">
        <header className="chat-header">
          <h1>{title || "\u00a0"}</h1>
          {pending.length > 0 && <span className="badge needs-approval">{pending.length} waiting for approval</span>}
        </header>

        <div className="chat-scroll" ref={scrollRef} onScroll={onScroll}>
          <div className="transcript">
            {isEmpty && <EmptyState offline={!!info?.offline} onPick={pick} />}
            {view?.loading && !transcript && <p className="muted loading">Loading the conversation…</p>}
            {view?.error && view.id === conversationId && (
              <div className="alert error">
                {view.error.status === 404
                  ? <>This conversation does not exist (it may have been deleted). <button type="button" className="link" onClick={() => navigate({ page: "chat" })}>Start a new chat</button></>
                  : <>Could not load the conversation: {view.error.message} <button type="button" className="link" onClick={() => conversationId && void reload(conversationId)}>Try again</button></>}
              </div>
            )}
            {transcript && transcript.items.length === 0 && !(turn && liveHere) && (
              <p className="muted loading">No messages yet. Say something below.</p>
            )}
            {rows.map(renderRow)}
            {typing && (
              <div className="typing" role="status">
                <span className="dots" aria-hidden="true"><span /><span /><span /></span>
                <span className="typing-text">{serverStreaming ? "A response is still running in this conversation…" : stream.stopping ? "Stopping…" : "The model is working…"}</span>
              </div>
            )}
            {notice && <p className="alert info notice">{notice} <button type="button" className="link" onClick={() => setNotice(null)}>Dismiss</button></p>}
            {reloadError && (
              <p className="alert error" role="alert">
                Could not reload the conversation: {reloadError}{" "}
                <button type="button" className="link" onClick={() => conversationId && void reload(conversationId)}>Try again</button>
              </p>
            )}
          </div>
        </div>

        <form className="composer" onSubmit={(e) => { e.preventDefault(); void submit(); }}>
          {pending.length > 0 && (
            <p className="composer-note">
              {pending.length === 1 ? "1 approval request is" : `${pending.length} approval requests are`} waiting.
              Sending a message now denies {pending.length === 1 ? "it" : "them"} (the model is told you moved on).
            </p>
          )}
          {composerError && <p className="alert error" role="alert">{composerError}</p>}
          <div className="composer-box">
            <textarea
              ref={composerRef}
              aria-label="Message"
              rows={1}
              value={draft}
              placeholder={info?.offline ? 'Message the model — e.g. delete_forecast {"city": "Oslo"}' : "Message the model"}
              onChange={(e) => setDraft(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
                  e.preventDefault();
                  void submit();
                }
              }}
            />
            {busy && (
              <button type="button" className="stop" onClick={() => void stop()} disabled={stream.stopping}>
                <span className="stop-square" aria-hidden="true" />Stop
              </button>
            )}
            <button type="submit" className="primary send" disabled={!canSend}>Send</button>
          </div>
          <p className="composer-help">Enter to send · Shift+Enter for a new line</p>
        </form>
        <div className="sr-only" aria-live="polite" aria-atomic="true">{announcement}</div>
      </section>
    </div>
  );
}
