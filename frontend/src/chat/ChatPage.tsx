// The chat: conversations on the left (a drawer on narrow screens), the
// transcript with its live turn and approval cards, and the composer. The
// server owns the conversation (TanStack Query holds it; the stream keeps
// it current); this page composes the pieces and says what happened.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useEffectEvent, useRef, useState } from "react";
import { useTranslation } from "react-i18next";
import { api, ApiError } from "../api/client";
import { keys } from "../api/query";
import { navigate, parseRoute } from "../router";
import { Composer, type ComposerHandle } from "./Composer";
import { useCardFocus, useDecisionQueue } from "./DecisionQueue";
import { EmptyState } from "./EmptyState";
import { GrantsPanel } from "./GrantsPanel";
import { LiveStatus } from "./LiveStatus";
import { useConversation, useConversations, useInfo } from "./queries";
import { Sidebar, titleOf } from "./Sidebar";
import { approvalsOf } from "./transcript";
import { ToolsControl } from "./ToolsControl";
import { Transcript } from "./Transcript";
import { useChatStream, type LiveTurn } from "./useChatStream";
import { useConversationEvents } from "./useConversationEvents";
import { useAttention } from "./useAttention";
import { useDecidedElsewhere } from "./useDecidedElsewhere";
import { useScoped } from "./useScoped";
import "./chat.css";

const drawerId = "chat-conversations";

/** linkedApproval: the request a link names (a webhook's "#approval-mcpr_…"), shown in view and highlighted. */
export function ChatPage({ conversationId, linkedApproval }: { conversationId?: string; linkedApproval?: string }) {
  const { t } = useTranslation("chat");
  const qc = useQueryClient();
  const info = useInfo();
  const composer = useRef<ComposerHandle>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const menuButton = useRef<HTMLButtonElement>(null);
  const [drawer, setDrawer] = useState(false);
  const [announcement, setAnnouncement] = useState("");
  const [notice, setNotice] = useScoped<string | null>(conversationId, null);
  const [retryError, setRetryError] = useScoped<string | null>(conversationId, null);

  const stream = useChatStream({
    onConversation: (id, turn) => {
      // A new conversation: its address, unless the person went elsewhere meanwhile.
      const here = parseRoute(location);
      if (turn.request.kind === "message" && !turn.request.conversationId && here.page === "chat" && !here.conversationId) {
        navigate({ page: "chat", conversationId: id }, { replace: true });
      }
    },
    onEnd: (turn: LiveTurn) => {
      if (turn.cut === "broken") setNotice(t("notice.broken"));
      const end = turn.terminal;
      if (end?.event === "completed") {
        const n = end.data.pending_approvals;
        if (n === 0 && end.data.sent) setAnnouncement(t("announce.answered"));
        else if (!end.data.sent && n > 0) setAnnouncement(t("announce.recorded", { count: n }));
      } else if (end) {
        setAnnouncement(t("announce.failed", { message: end.data.message }));
      }
    },
  });

  // This page's stream's turn, when it belongs to the conversation shown.
  const own = stream.turn && (stream.turn.conversationId ?? undefined) === conversationId ? stream.turn : null;
  const live = own !== null && own.phase !== "ended";
  const conv = useConversation(conversationId);
  const error = conv.error instanceof ApiError ? conv.error : null;
  // Deleted meanwhile (in another tab, say): what was shown is gone too.
  const tr = error?.status === 404 ? undefined : conv.data;
  // Every tab follows the conversation: a turn started elsewhere (another tab, a reload) shows as it streams.
  const events = useConversationEvents(conversationId, tr !== undefined);
  const followed = own === null && events.turn?.phase === "streaming" ? events.turn : null;
  const turn = own ?? followed;
  // A turn this page did not start runs: decisions and Retry wait for it, Stop cancels it on the server.
  const serverStreaming = own === null && (followed !== null || !!tr?.conversation.streaming);
  const busy = live || serverStreaming;

  // Going to another conversation leaves the stream of this one (its turn goes on).
  const leave = useEffectEvent((id: string | undefined) => {
    const cur = stream.turn;
    if (cur && cur.phase !== "ended" && cur.conversationId !== null && cur.conversationId !== id) stream.detach();
  });
  useEffect(() => { leave(conversationId); }, [conversationId]);

  const queue = useDecisionQueue(stream);
  const approvals = tr ? approvalsOf(tr) : [];
  const pending = approvals.filter((a) => a.state === "pending");
  const list = useConversations();
  const elsewhere = (list.data ?? []).reduce((n, c) => n + (c.id === conversationId ? 0 : c.pending_approvals), 0);
  useAttention(pending, elsewhere); // title badge and a notification while the tab is hidden
  const decidedElsewhere = useDecidedElsewhere(approvals, queue.status);
  const cardRef = useCardFocus(serverStreaming ? [] : pending.map((a) => a.approval_request_id), composer, linkedApproval);

  const cancel = useMutation({
    mutationFn: (id: string) => api.cancel(id),
    onSettled: (_d, _e, id) => qc.invalidateQueries({ queryKey: keys.conversation(id), exact: true }),
  });

  const send = async (text: string) => {
    setNotice(null);
    setRetryError(null);
    const r = await stream.start({ kind: "message", input: text, conversationId });
    return r.ok ? { ok: true as const } : { ok: false as const, error: r.aborted ? undefined : r.error.message };
  };
  // The Tools control in a new chat: the conversation is created first, so its tools can be chosen before the first message.
  const createForTools = async () => {
    const c = await api.createConversation();
    void qc.invalidateQueries({ queryKey: keys.conversations, exact: true });
    navigate({ page: "chat", conversationId: c.id });
    return c.id;
  };
  const retry = async () => {
    if (!conversationId || busy) return;
    setRetryError(null);
    setNotice(null);
    const r = await stream.start({ kind: "retry", conversationId });
    if (!r.ok && !r.aborted) setRetryError(r.error.message);
  };
  const stop = () => {
    if (live) void stream.stop();
    else if (serverStreaming && conversationId) cancel.mutate(conversationId);
  };

  // ---- the drawer (narrow screens) ----
  const closeDrawer = useCallback((returnFocus: boolean) => {
    setDrawer(false);
    if (returnFocus) menuButton.current?.focus();
  }, []);
  const picked = (newChat: boolean) => {
    setDrawer(false);
    if (newChat) composer.current?.focus();
    else if (drawer) heading.current?.focus();
  };

  const title = tr?.conversation.title.trim()
    || (!conversationId || own ? t("header.newChat") : tr ? titleOf(t, tr.conversation) : "");
  const retryLoad = () => void conv.refetch();

  return (
    <div className={`chat-page${drawer ? " drawer-open" : ""}`}>
      <Sidebar id={drawerId} currentId={conversationId} open={drawer} onClose={closeDrawer} onPicked={picked} />
      <section className="chat-main" aria-label={t("page.label")}>
        <header className="chat-header">
          <button ref={menuButton} type="button" className="icon menu-button" aria-expanded={drawer} aria-controls={drawerId}
            aria-label={t("header.menu")} onClick={() => setDrawer((o) => !o)}>
            <svg aria-hidden="true" viewBox="0 0 16 16" width="18" height="18"><path fill="currentColor" d="M2 3.5h12V5H2V3.5Zm0 3.75h12v1.5H2v-1.5ZM2 11h12v1.5H2V11Z" /></svg>
          </button>
          <h1 ref={heading} tabIndex={-1}>{title || "\u00a0"}</h1>
          {pending.length > 0 && <span className="badge needs-approval">{t("header.waiting", { count: pending.length })}</span>}
          {conversationId && tr && <GrantsPanel key={conversationId} conversationId={conversationId} />}
          {(conversationId || !busy) && <ToolsControl conversationId={conversationId} onCreate={createForTools} />}
        </header>

        <Transcript
          transcript={tr} turn={turn} serverStreaming={serverStreaming} stopping={stream.stopping || cancel.isPending}
          status={queue.status} onDecide={queue.decide} onDecideAll={queue.decideAll} cardRef={cardRef} linked={linkedApproval}
          onRetry={() => void retry()} retryError={retryError}
          footer={<>
            {notice && <p className="alert info notice">{notice} <button type="button" className="link" onClick={() => setNotice(null)}>{t("notice.dismiss")}</button></p>}
            {conversationId && tr && <LiveStatus connection={events.connection} onReconnect={events.reconnect} />}
            {error && tr && (
              <p className="alert error" role="alert">
                {t("load.reloadError", { message: error.message })}{" "}
                <button type="button" className="link" onClick={retryLoad}>{t("load.tryAgain")}</button>
              </p>
            )}
          </>}
        >
          {!conversationId && !turn && <EmptyState offline={!!info.data?.offline} onPick={(s) => composer.current?.fill(s)} />}
          {conversationId && conv.isPending && <p className="muted loading">{t("load.loading")}</p>}
          {error && !tr && (
            <div className="alert error">
              {error.status === 404
                ? <>{t("load.notFound")} <button type="button" className="link" onClick={() => navigate({ page: "chat" })}>{t("load.startNew")}</button></>
                : <>{t("load.error", { message: error.message })} <button type="button" className="link" onClick={retryLoad}>{t("load.tryAgain")}</button></>}
            </div>
          )}
          {tr && tr.items.length === 0 && !turn && <p className="muted loading">{t("load.empty")}</p>}
        </Transcript>

        <Composer ref={composer} scope={conversationId} busy={busy} stopping={stream.stopping || cancel.isPending}
          pending={pending.length} offline={!!info.data?.offline} onSend={send} onStop={stop} />
        <div className="sr-only" aria-live="polite" aria-atomic="true">
          {pending.map((a) => t("announce.approvalNeeded", { tool: a.tool_name, server: a.server_label })).join(". ")}
        </div>
        <div className="sr-only" aria-live="polite" aria-atomic="true">{announcement}</div>
        <div className="sr-only" aria-live="polite" aria-atomic="true">{decidedElsewhere}</div>
      </section>
    </div>
  );
}
