package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
	"github.com/toolgate/toolgate/internal/conversation/upstreamerr"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/faults"
	"github.com/toolgate/toolgate/internal/policy"
)

// Run runs the turn: its events go to the conversation's event log, from
// which every stream of the conversation (the request's own, other tabs,
// other replicas) reads them; observer (metrics; may be nil) sees each as
// it happens. It does not stop when the browser goes away: the upstream
// stream is read to its end and everything is stored. Only Cancel (from
// any replica), a lost lease or a shutdown stops it. ctx is the request's
// context; Run keeps its values and drops its cancellation.
func (t *Turn) Run(ctx context.Context, observer conversation.Sink) {
	s := t.s
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	if observer != nil {
		for _, e := range t.opening() {
			observer.Send(e.name, e.data)
		}
	}
	if !t.claimed {
		return
	}
	reg := s.register(t.conv.ID, t.conv.OwnerID, t.id, cancel)
	defer s.unregister(t.conv.ID, reg)
	store := context.WithoutCancel(ctx)
	log := s.hub.Log(store, t.conv.ID, t.id, t.last, observer)
	r := relay{t: t, sink: log, log: log, store: store, texts: map[string]*strings.Builder{}, w: itemWriter{t: t, log: log, ctx: store}}
	r.run(ctx)
}

// relay is one upstream exchange of a claimed turn.
type relay struct {
	t        *Turn
	sink     conversation.Sink
	log      *eventlog.TurnLog
	store    context.Context // for writes: they must happen even when the turn is cancelled
	groups   []policy.ServerTools
	response string                       // the upstream response id, once created
	asked    []string                     // approval requests this response made
	texts    map[string]*strings.Builder  // message item id -> text so far (for a cut stream); appended to, not copied, per delta
	running  []*conversation.UpstreamItem // calls begun (tool.started) whose item.done has not arrived, in order
	delivery int                          // what is known of the answers' delivery when the turn fails
	ran      map[string]bool              // approval request ids whose mcp_call arrived
	auto     []string                     // approval requests this response made that rules (or the policy) answered
	follows  int                          // follow-ups this turn sent on its own for requests rules answered
	next     bool                         // the response completed with every request answered: send the follow-up
	unstored []conversation.Item          // finished items whose write failed: the turn's end stores them
	held     heldWrites                   // finished messages and asked approval requests not stored yet (hold, holdApproval)
	w        itemWriter                   // stores items with their events
}

func (r *relay) run(ctx context.Context) {
	for r.exchange(ctx) {
		// Rules answered every request of the response: the turn goes on.
		r.follows++
		r.response, r.asked, r.auto, r.running, r.ran, r.delivery, r.next, r.unstored, r.held = "", nil, nil, nil, nil, 0, false, nil, nil
		r.texts = map[string]*strings.Builder{}
	}
}

// exchange sends one request upstream and relays its response; true when
// the response completed with every approval request answered by rules,
// and the turn continues with the follow-up carrying the answers.
func (r *relay) exchange(ctx context.Context) bool {
	t, s := r.t, r.t.s
	var err error
	if err = s.serverHealth.requestTools(r); err != nil {
		r.fail(conversation.TurnError{Code: "policy_unavailable", Message: "the tool policies could not be read: " + err.Error(), Retryable: true})
		return false
	}
	req := conversation.UpstreamRequest{ConversationID: t.conv.ID, TurnID: t.id, PreviousResponseID: t.previous, UserText: t.userText,
		Answers: t.answers, Tools: r.groups, Retry: len(t.answers) == 0}
	if len(t.answers) > 0 {
		faults.Crash(faults.FollowUpBeforeSend)
	}
	sent := s.now()
	stream, err := r.stream(ctx, req)
	if err != nil && t.previous != "" && lostPrevious(err) {
		if stream, err = r.fromTranscript(ctx); errors.Is(err, errTurnEnded) {
			return false
		}
	}
	s.observer.UpstreamFirstEvent(s.now().Sub(sent))
	if err != nil {
		e := upstreamerr.FromUpstream(ctx, err, false)
		r.delivery = deliveryUnknown
		if !upstreamerr.MaybeDelivered(err) {
			r.delivery = deliveryRefused
		} else if len(t.answerIDs) > 0 {
			e.Message += "; the decisions may have reached the model's provider, so they will not be sent again"
		}
		r.fail(e)
		return false
	}
	defer stream.Close()
	for stream.Next() {
		ev := stream.Event()
		done, err := r.handle(ctx, ev)
		if err == nil && !done {
			err = r.log.Failed()
		}
		if err != nil {
			s.log.ErrorContext(ctx, "storing a turn's output failed", "conversation_id", t.conv.ID, "error", err)
			r.fail(conversation.TurnError{Code: conversation.CodeStorageFailed, Message: "what the model sent could not be stored, so the turn was stopped; reload to see what was kept", Retryable: true})
			return false
		}
		if done {
			return r.next
		}
	}
	r.fail(upstreamerr.FromUpstream(ctx, stream.Err(), true))
	return false
}

// continueTurn records, before the follow-up leaves, that the turn goes on
// from response (every approval request of which rules answered) and that
// the follow-up carries their answers: after a crash from here on, they are
// never sent again (the turn is lost, like any follow-up in flight).
func (r *relay) continueTurn(response string) error {
	t, s := r.t, r.t.s
	still := false
	err := s.store.Tx(r.store, func(repo conversation.Repo) error {
		t.answers, t.answerIDs, t.decisions = nil, nil, nil
		var err error
		if still, err = repo.Turns.Continue(r.store, t.conv.ID, t.id, response); err != nil || !still {
			return err // deleted, or taken over by another replica
		}
		t.previous, t.userText = response, ""
		if err := t.closeOpen(r.store, repo); err != nil {
			return err
		}
		t.sent = t.sent || len(t.answerIDs) > 0
		return repo.Approvals.MarkSent(r.store, t.answerIDs, t.id)
	})
	r.next = err == nil && still
	return err
}

// handle acts on one event; done reports a terminal event.
func (r *relay) handle(ctx context.Context, ev conversation.Event) (done bool, err error) {
	t, s := r.t, r.t.s
	if ev.Kind != conversation.EventCompleted {
		if err := r.held.flush(r); err != nil {
			return false, err
		}
	}
	switch ev.Kind {
	case conversation.EventCreated:
		r.response = ev.ResponseID
		if len(t.answerIDs) > 0 {
			// Upstream has the answers now: they are never sent as approvals again.
			return false, s.store.Repo().Approvals.MarkAnswered(r.store, t.answerIDs, ev.ResponseID)
		}
	case conversation.EventTextDelta:
		b := r.texts[ev.ItemID]
		if b == nil {
			b = &strings.Builder{}
			r.texts[ev.ItemID] = b
		}
		b.WriteString(ev.Delta)
		r.sink.Send(conversation.EventNameTextDelta, conversation.TextDeltaEvent{ItemID: ev.ItemID, ResponseID: r.response, Delta: ev.Delta})
	case conversation.EventItemStarted:
		r.started(ev.Item)
	case conversation.EventItemDone:
		return false, r.item(ctx, ev.Item)
	case conversation.EventCompleted:
		return r.completed(ev)
	case conversation.EventFailed, conversation.EventIncomplete:
		e := conversation.TurnError{Code: "response_failed", Message: "the model's response failed"}
		if ev.Kind == conversation.EventIncomplete {
			e = conversation.TurnError{Code: "response_incomplete", Message: "the model stopped before finishing its response"}
		}
		if ev.Error != nil {
			e.Message = fmt.Sprintf("%s: %s (%s)", e.Message, ev.Error.Message, ev.Error.Code)
		}
		r.end(e, conversation.EventNameFailed, conversation.FailedEvent{ResponseID: r.response, Code: e.Code, Message: e.Message})
		return true, nil
	case conversation.EventError:
		e := conversation.TurnError{Code: "upstream_error", Message: "the model's provider reported an error"}
		if ev.Error != nil {
			e.Message = fmt.Sprintf("the model's provider reported an error: %s (%s)", ev.Error.Message, ev.Error.Code)
			e.Retryable = ev.Error.Retryable()
		}
		r.fail(e)
		return true, nil
	}
	return false, nil
}

// completed ends the turn with the response that completed or, when rules
// answered every request it asked, goes on with the follow-up: the turn's
// end and its terminal event commit together, then the event is published.
func (r *relay) completed(ev conversation.Event) (bool, error) {
	t, s := r.t, r.t.s
	r.response = ev.ResponseID
	if len(r.auto) > 0 && len(r.asked) == 0 {
		if r.follows < maxAutoFollowUps {
			if err := r.held.flush(r); err != nil {
				return true, err
			}
			return true, r.continueTurn(ev.ResponseID)
		}
		r.notice(conversation.Notice{Code: NoticeAutoLimit, Message: fmt.Sprintf(
			"Rules answered the model's requests %d times in a row in this turn, so Toolgate stopped here; the last answers go to the model with your next message.",
			maxAutoFollowUps)})
	}
	id := ev.ResponseID
	done := conversation.CompletedEvent{ResponseID: &id, PendingApprovals: len(r.asked), PendingApprovalIDs: nonNil(r.asked), Sent: true}
	// The turn's end and its terminal event commit together: a stream
	// that sees the conversation idle has its terminal event, after the
	// turn's deltas.
	r.log.Flush()
	terminal := mustEvent(conversation.EventNameCompleted, done)
	var (
		last    int64
		evs     []conversation.NewEvent
		decided []conversation.DecisionEvent
	)
	s.hub.Begin(t.conv.ID)
	err := s.store.Tx(r.store, func(repo conversation.Repo) error {
		var err error
		last, evs, decided, err = r.endCompleted(repo, ev.ResponseID, terminal)
		return err
	})
	if notRunning(err) {
		// Another replica took the turn over (or the conversation is
		// gone): nothing was written, and the turn stops here.
		err, last = nil, 0
	}
	if err != nil || last == 0 {
		s.hub.End(t.conv.ID)
		return true, err
	}
	s.hub.Publish(t.conv.ID, eventlog.Stored(t.id, last, evs)) // committed
	r.held.stored(r)
	for _, d := range decided {
		r.log.Observe(conversation.EventNameDecision, d)
	}
	r.log.Observe(conversation.EventNameCompleted, done)
	return true, nil
}

// endCompleted is completed's transaction: while the turn is still ours
// (else it fails with CodeTurnNotRunning and writes nothing), in gateway
// mode it settles the approvals the turn carried, then ends the turn on
// response and appends the decisions and the terminal event. The check
// that the turn still runs goes in one batch with the first write (or the
// COMMIT), and a turn that sent no answers has no approvals to settle:
// a message's turn ends in at most two round trips (was four).
func (r *relay) endCompleted(repo conversation.Repo, response string, terminal conversation.NewEvent) (last int64, evs []conversation.NewEvent, decided []conversation.DecisionEvent, err error) {
	t, s := r.t, r.t.s
	if err := repo.Turns.StillRuns(r.store, t.conv.ID, t.id); err != nil {
		return 0, nil, nil, err
	}
	if evs, err = r.held.store(r, repo); err != nil {
		return 0, nil, nil, err
	}
	if s.gateway && t.sent {
		// The responses of the turn ended: an approval it carried
		// whose call did not pass the MCP face did not run.
		sent, err := repo.Approvals.Sent(r.store, t.conv.ID, t.id)
		if err != nil {
			return 0, evs, decided, err
		}
		if decided, err = s.keeper.SettleCalls(r.store, repo, t.user.ID, sent, ""); err != nil {
			return 0, evs, decided, err
		}
		for _, d := range decided {
			evs = append(evs, mustEvent(conversation.EventNameDecision, d))
		}
	}
	if err := repo.Turns.End(r.store, t.conv.ID, t.id, response); err != nil {
		return 0, evs, decided, err
	}
	evs = append(evs, terminal)
	last, err = r.log.Put(r.store, repo, evs)
	return last, evs, decided, err
}

// item stores a finished output item and relays it.
func (r *relay) item(ctx context.Context, u *conversation.UpstreamItem) error {
	s := r.t.s
	s.serverHealth.itemHealth(r, u)
	it, ok := itemOf(u, r.response, r.groups)
	switch {
	case !ok:
		return nil
	case u.Type == conversation.ItemMessage:
		delete(r.texts, u.ID)
		r.held.hold(it)
		return nil
	case u.Type == conversation.ItemListTools:
		if err := s.policies.Tools.RecordListed(r.store, u.ServerLabel, u.Tools); err != nil {
			return err
		}
	case u.Type == conversation.ItemCall && u.ApprovalID != "":
		if r.ran == nil {
			r.ran = map[string]bool{}
		}
		r.ran[u.ApprovalID] = true
		if by := s.asker.ruleAllowedBy(r, u.ApprovalID); by != nil {
			it.AllowedBy = by
		}
	case u.Type == conversation.ItemApprovalRequest:
		return r.approval(ctx, u, it)
	}
	if _, err := r.w.storeItem(it); err != nil { // a call with its receipt, and its event
		// Received whole: the turn's end stores it, once the database is
		// back if need be, so a call that ran is never lost.
		r.unstored = append(r.unstored, it)
		return err
	}
	if u.Type == conversation.ItemCall {
		r.running = slices.DeleteFunc(r.running, func(x *conversation.UpstreamItem) bool { return x.ID == u.ID })
	}
	return nil
}

// started relays that the provider began a call, asked or not; the call
// counts as running until its item is done.
func (r *relay) started(u *conversation.UpstreamItem) {
	if u == nil || u.Type != conversation.ItemCall || slices.ContainsFunc(r.running, func(x *conversation.UpstreamItem) bool { return x.ID == u.ID }) {
		return
	}
	r.running = append(r.running, u)
	var approval *string
	if u.ApprovalID != "" {
		id := u.ApprovalID
		approval = &id
	}
	r.sink.Send(conversation.EventNameToolStarted, conversation.ToolStartedEvent{ItemID: u.ID, ResponseID: r.response, ServerLabel: u.ServerLabel,
		UpstreamLabel: u.UpstreamLabel, ToolName: u.Name, ApprovalRequestID: approval, StartedAt: r.t.s.now()})
}

// interrupted is the transcript's trace of a call that began but never
// finished: the turn ended before the provider reported a result, so the
// tool may or may not have run.
func (r *relay) interrupted(u *conversation.UpstreamItem) conversation.Item {
	return conversation.Item{Type: conversation.ItemCall, ID: u.ID, ResponseID: r.response, ServerLabel: u.ServerLabel, UpstreamLabel: u.UpstreamLabel,
		Name: u.Name, ApprovalRequestID: u.ApprovalID, AllowedBy: allowedBy(r.groups, u), Interrupted: true}
}

// notice stores a notice item in the transcript and relays it; the turn
// goes on whatever happens to the write.
func (r *relay) notice(n conversation.Notice) {
	t, s := r.t, r.t.s
	it, err := s.store.Repo().Conversations.AppendItem(r.store, t.conv.ID, conversation.Item{Type: conversation.ItemNotice, ID: newID("note_"), ResponseID: r.response, Notice: &n})
	if err != nil {
		s.log.WarnContext(r.store, "storing a notice failed", "conversation_id", t.conv.ID, "code", n.Code, "error", err)
		it = conversation.Item{Type: conversation.ItemNotice, ID: newID("note_"), Notice: &n, CreatedAt: s.now()}
	}
	r.sink.Send(conversation.EventNameNotice, conversation.NoticeEvent{Item: it})
}

// notRunning says err is Turns.StillRuns's: the turn no longer runs in
// its conversation.
func notRunning(err error) bool {
	e, ok := apperr.As(err)
	return ok && e.Code == conversation.CodeTurnNotRunning
}

// stillOurs locks the conversation and reports whether this turn still
// runs in it: not when it was deleted, or taken over after this replica
// lost its lease (the other replica closed it; writing its end again
// would contradict that).
func (r *relay) stillOurs(repo conversation.Repo) (bool, error) {
	return r.t.stillOursCtx(r.store, repo)
}

// stillOursCtx is stillOurs with ctx.
func (t *Turn) stillOursCtx(ctx context.Context, repo conversation.Repo) (bool, error) {
	c, err := repo.Conversations.Get(ctx, t.user.ID, t.conv.ID, true)
	if apperr.KindOf(err) == apperr.NotFound {
		return false, nil
	}
	return err == nil && c.ActiveTurn == t.id, err
}
