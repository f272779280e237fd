package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation/record"
	"github.com/toolgate/toolgate/internal/conversation/recovery"
	"github.com/toolgate/toolgate/internal/faults"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/rules"
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
	log := s.hub.Log(store, t.conv.ID, t.id, observer)
	r := relay{t: t, sink: log, log: log, store: store, texts: map[string]*strings.Builder{}}
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
}

func (r *relay) run(ctx context.Context) {
	for r.exchange(ctx) {
		// Rules answered every request of the response: the turn goes on.
		r.follows++
		r.response, r.asked, r.auto, r.running, r.ran, r.delivery, r.next, r.unstored = "", nil, nil, nil, nil, 0, false, nil
		r.texts = map[string]*strings.Builder{}
	}
}

// exchange sends one request upstream and relays its response; true when
// the response completed with every approval request answered by rules,
// and the turn continues with the follow-up carrying the answers.
func (r *relay) exchange(ctx context.Context) bool {
	t, s := r.t, r.t.s
	var err error
	if err = r.requestTools(); err != nil {
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
		e := r.upstreamError(ctx, err, false)
		r.delivery = deliveryUnknown
		if !maybeDelivered(err) {
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
	r.fail(r.upstreamError(ctx, stream.Err(), true))
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
		if still, err = repo.ContinueTurn(r.store, t.conv.ID, t.id, response); err != nil || !still {
			return err // deleted, or taken over by another replica
		}
		t.previous, t.userText = response, ""
		if err := t.closeOpen(r.store, repo); err != nil {
			return err
		}
		return repo.MarkSent(r.store, t.answerIDs, t.id)
	})
	r.next = err == nil && still
	return err
}

// handle acts on one event; done reports a terminal event.
func (r *relay) handle(ctx context.Context, ev conversation.Event) (done bool, err error) {
	t, s := r.t, r.t.s
	switch ev.Kind {
	case conversation.EventCreated:
		r.response = ev.ResponseID
		if len(t.answerIDs) > 0 {
			// Upstream has the answers now: they are never sent as approvals again.
			return false, s.store.Repo().MarkAnswered(r.store, t.answerIDs, ev.ResponseID)
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
	if err != nil || last == 0 {
		s.hub.End(t.conv.ID)
		return true, err
	}
	s.hub.Publish(t.conv.ID, eventlog.Stored(t.id, last, evs)) // committed
	for _, d := range decided {
		r.log.Observe(conversation.EventNameDecision, d)
	}
	r.log.Observe(conversation.EventNameCompleted, done)
	return true, nil
}

// endCompleted is completed's transaction: while the turn is still ours
// (else last is 0), in gateway mode it settles the approvals the turn
// carried, then ends the turn on response and appends the decisions and
// the terminal event.
func (r *relay) endCompleted(repo conversation.Repo, response string, terminal conversation.NewEvent) (last int64, evs []conversation.NewEvent, decided []conversation.DecisionEvent, err error) {
	t, s := r.t, r.t.s
	if still, err := r.stillOurs(repo); err != nil || !still {
		return 0, nil, nil, err
	}
	if s.gateway {
		// The responses of the turn ended: an approval it carried
		// whose call did not pass the MCP face did not run.
		sent, err := repo.SentApprovals(r.store, t.conv.ID, t.id)
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
	if err := repo.EndTurn(r.store, t.conv.ID, t.id, response); err != nil {
		return 0, evs, decided, err
	}
	evs = append(evs, terminal)
	last, err = repo.AppendEvents(r.store, t.conv.ID, t.id, evs)
	return last, evs, decided, err
}

// item stores a finished output item and relays it.
func (r *relay) item(ctx context.Context, u *conversation.UpstreamItem) error {
	s := r.t.s
	r.itemHealth(u)
	it, ok := itemOf(u, r.response, r.groups)
	switch {
	case !ok:
		return nil
	case u.Type == conversation.ItemMessage:
		delete(r.texts, u.ID)
	case u.Type == conversation.ItemListTools:
		if err := s.policies.RecordListed(r.store, u.ServerLabel, u.Tools); err != nil {
			return err
		}
	case u.Type == conversation.ItemCall && u.ApprovalID != "":
		if r.ran == nil {
			r.ran = map[string]bool{}
		}
		r.ran[u.ApprovalID] = true
		if by := r.ruleAllowedBy(u.ApprovalID); by != nil {
			it.AllowedBy = by
		}
	case u.Type == conversation.ItemApprovalRequest:
		return r.approval(ctx, u, it)
	}
	stored, err := r.storeItem(it) // a call with its receipt
	if err != nil {
		// Received whole: the turn's end stores it, once the database is
		// back if need be, so a call that ran is never lost.
		r.unstored = append(r.unstored, it)
		return err
	}
	if u.Type == conversation.ItemCall {
		r.running = slices.DeleteFunc(r.running, func(x *conversation.UpstreamItem) bool { return x.ID == u.ID })
	}
	r.sink.Send(conversation.EventNameItem, conversation.ItemEvent{Item: stored})
	return nil
}

// itemOf is the transcript item of a finished output item of response;
// false for the types a transcript does not keep. Arguments are redacted;
// groups (the request's) say why a call ran.
func itemOf(u *conversation.UpstreamItem, response string, groups []policy.ServerTools) (conversation.Item, bool) {
	it := conversation.Item{Type: u.Type, ID: u.ID, ResponseID: response, ServerLabel: u.ServerLabel, UpstreamLabel: u.UpstreamLabel}
	switch u.Type {
	case conversation.ItemMessage:
		it.Text = u.Text
	case conversation.ItemListTools:
		it.Tools, it.ListError = u.Tools, u.ListError
	case conversation.ItemCall:
		it.Name, it.Output, it.CallError, it.ApprovalRequestID = u.Name, u.Output, u.CallError, u.ApprovalID
		it.Arguments, it.Redacted = conversation.Redact(u.Arguments)
		it.ArgumentsSHA256 = record.Digest([]byte(u.Arguments))
		if _, sha, err := gateway.ArgumentsDigest([]byte(u.Arguments)); err == nil {
			it.CanonicalSHA256 = sha
		}
		it.AllowedBy = allowedBy(groups, u)
	case conversation.ItemApprovalRequest:
		it.Name = u.Name
		it.Arguments, it.Redacted = conversation.Redact(u.Arguments)
	default:
		return conversation.Item{}, false
	}
	return it, true
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
		Name: u.Name, ApprovalRequestID: u.ApprovalID, AllowedBy: r.allowedBy(u), Interrupted: true}
}

func (r *relay) allowedBy(u *conversation.UpstreamItem) *conversation.AllowedBy {
	return allowedBy(r.groups, u)
}

func (r *relay) lookup(server, tool string) (policy.Policy, policy.Source) {
	return lookup(r.groups, server, tool)
}

// allowedBy says why a call ran, as the request built from groups treated it.
func allowedBy(groups []policy.ServerTools, u *conversation.UpstreamItem) *conversation.AllowedBy {
	if u.ApprovalID != "" {
		return &conversation.AllowedBy{Kind: "approval"}
	}
	p, src := lookup(groups, u.ServerLabel, u.Name)
	if src == policy.FromConversation || src == policy.FromGrant {
		return grantAllowedBy(groups, u.ServerLabel, u.Name)
	}
	return &conversation.AllowedBy{Kind: "policy", Policy: p, Source: src}
}

func lookup(groups []policy.ServerTools, server, tool string) (policy.Policy, policy.Source) {
	for _, g := range groups {
		if g.Server.Label == server {
			return g.Lookup(tool)
		}
	}
	return policy.Always, policy.FromUnknown
}

// askReason says why a tool asked, as the request built from the groups
// treated it: its policy's source and, where the policy layer knows, the
// reason (not read-only, new, changed with what changed).
func (r *relay) askReason(server, tool string) conversation.AskReason {
	_, src := r.lookup(server, tool)
	if src == policy.FromConversation { // allowed here, yet upstream asked: say so honestly
		src = policy.FromUnknown
	}
	why := conversation.AskReason{Policy: policy.Always, Source: src}
	for _, g := range r.groups {
		if g.Server.Label == server {
			if ab := g.AsksBecause(tool); ab != nil {
				why.Reason, why.Fields = ab.Reason, ab.Fields
			}
		}
	}
	return why
}

// askLock is the level of an admin's lock at Ask on the tool, as the
// request built from the groups treated it; nil when it is not locked.
func (r *relay) askLock(server, tool string) *policy.Source {
	for _, g := range r.groups {
		if g.Server.Label == server {
			if l := g.AskLock(tool); l != "" {
				return &l
			}
		}
	}
	return nil
}

func (r *relay) approval(ctx context.Context, u *conversation.UpstreamItem, it conversation.Item) error {
	t, s := r.t, r.t.s
	a := conversation.Approval{ID: u.ID, ConversationID: t.conv.ID, ResponseID: r.response, ServerLabel: u.ServerLabel,
		UpstreamLabel: u.UpstreamLabel, ToolName: u.Name, Reason: r.askReason(u.ServerLabel, u.Name),
		State: conversation.Pending, RequestedAt: s.now(), ServerTTLSeconds: r.serverTTL(u.ServerLabel)}
	a.StoredArguments = string(mustRedacted(u.Arguments))
	a.AskLock = r.askLock(u.ServerLabel, u.Name)
	r.cardWords(ctx, &a)
	a.Annotations, a.DefinitionDigest = r.annotations(u.ServerLabel, u.Name)
	// Bound to the real arguments: a call through the MCP face runs on
	// this approval only with arguments of this digest.
	if _, sha, err := gateway.ArgumentsDigest([]byte(u.Arguments)); err == nil {
		a.ArgumentsSHA256 = sha
	}
	a.Corrects = r.corrects(u.ServerLabel, u.Name, a.StoredArguments)
	// A decision hook is asked first; when it approves or denies, the rules
	// are not consulted (hookdecide.go).
	if a.Rules = r.hookCheck(ctx, u, it); a.Rules == nil {
		a.Rules = r.checkRules(u)
	}
	auto := a.Rules != nil && a.Rules.By != ""
	if auto {
		// Answered without a card: by a rule, or by the policy when no rule held.
		now, reason, scope := s.now(), autoReason(a.Rules, a.ToolName, a.ServerLabel), conversation.ScopeOnce
		a.State, a.DecidedAt, a.DecisionReason, a.Scope = conversation.Denied, &now, &reason, &scope
		if a.Rules.Decision == string(rules.Approve) {
			a.State = conversation.Approved
		}
	} else if a.Rules != nil {
		a.Reason.Reason = policy.ReasonRules
	}
	var stored conversation.Item
	err := s.store.Tx(r.store, func(repo conversation.Repo) error {
		if err := repo.InsertApproval(r.store, a); err != nil {
			return err
		}
		if auto {
			if err := repo.Decide(r.store, t.user.ID, a); err != nil {
				return err
			}
			after, _ := json.Marshal(map[string]any{"approval_request_id": a.ID, "conversation_id": a.ConversationID,
				"state": a.State, "reason": a.DecisionReason, "rules": a.Rules, "by": a.Rules.By})
			before, _ := json.Marshal(map[string]any{"approval_request_id": a.ID, "state": conversation.Pending})
			if err := s.policies.Audit(r.store, repo, policy.AuditEntry{Actor: "toolgate", Action: policy.ActionDecision,
				ServerLabel: &a.ServerLabel, ToolName: &a.ToolName, Before: before, After: after,
				ConversationID: a.ConversationID}); err != nil {
				return err
			}
		}
		var err error
		stored, err = repo.AppendItem(r.store, t.conv.ID, it)
		return err
	})
	if err != nil {
		return err
	}
	if auto {
		r.auto = append(r.auto, a.ID)
		p := present(a)
		stored.Approval = &p
		r.sink.Send(conversation.EventNameItem, conversation.ItemEvent{Item: stored})
		ev := decisionEvent(a, nil)
		ev.PendingApprovalIDs = nonNil(slices.Clone(r.asked))
		r.sink.Send(conversation.EventNameDecision, ev)
		return nil
	}
	r.asked = append(r.asked, a.ID)
	r.sink.Send(conversation.EventNameApproval, s.withExpiry(present(a)))
	return nil
}

// mustRedacted is raw with its secrets hidden, as an approval request stores
// its arguments: Toolgate never needs the originals again (upstream keeps
// them and runs an approved call with them), so it does not keep them.
func mustRedacted(raw string) []byte {
	b, _ := conversation.Redact(raw)
	return b
}

// annotations are what the tool declared, as discovery stored it: shown to
// the person deciding, with the definition's digest (what an approval is
// given for). A tool Toolgate has not discovered declared nothing.
func (r *relay) annotations(server, tool string) ([]byte, string) {
	t, ok, err := r.t.s.policies.DiscoveredTool(r.store, server, tool)
	if err == nil && ok {
		if b, err := json.Marshal(t.Annotations); err == nil {
			return b, t.Digest()
		}
	}
	return []byte("{}"), ""
}

// upstreamError turns the way a stream or request ended into the error event.
func (r *relay) upstreamError(ctx context.Context, err error, streamed bool) conversation.TurnError {
	var ue *conversation.UpstreamError
	switch {
	case errors.Is(context.Cause(ctx), ErrShutdown):
		return conversation.TurnError{Code: "server_shutdown", Message: "Toolgate is shutting down, so the turn was stopped; what arrived before is kept", Retryable: true}
	case errors.Is(context.Cause(ctx), recovery.ErrLeaseLost):
		return recovery.InterruptedError("this one")
	case errors.Is(context.Cause(ctx), ErrAccountDisabled):
		return conversation.TurnError{Code: "account_disabled", Message: "an admin disabled this account, so its turn was stopped; what arrived before is kept"}
	case ctx.Err() != nil:
		return conversation.TurnError{Code: "cancelled", Message: "the turn was cancelled; what arrived before is kept"}
	case errors.As(err, &ue) && ue.Code == conversation.CodeRequestTooLarge:
		return conversation.TurnError{Code: conversation.CodeRequestTooLarge, Message: ue.Message}
	case errors.As(err, &ue) && ue.Code == conversation.CodeUnreachable:
		return conversation.TurnError{Code: conversation.CodeUnreachable, Message: "the model's provider could not be reached: " + ue.Message, Retryable: true}
	case errors.As(err, &ue) && ue.Code == conversation.CodeFirstByteTimeout:
		return conversation.TurnError{Code: conversation.CodeFirstByteTimeout, Message: ue.Message + "; retrying may help", Retryable: true}
	case errors.As(err, &ue) && ue.Code == conversation.CodeIdleTimeout:
		return conversation.TurnError{Code: conversation.CodeIdleTimeout, Message: ue.Message + "; what arrived before is kept, and retrying may help", Retryable: true}
	case errors.As(err, &ue) && ue.QuotaExceeded():
		return conversation.TurnError{Code: "upstream_quota_exceeded", Message: "the model's provider refused the request because the OpenAI account has run out of quota or credit (" +
			ue.Message + "); an admin needs to check the account's plan and billing at platform.openai.com before turns can run again"}
	case errors.As(err, &ue) && ue.Status == 429:
		return conversation.TurnError{Code: "upstream_rate_limited", Message: "the model's provider is rate limiting requests (429) and retries did not help; try again in a moment: " + ue.Message, Retryable: true}
	case errors.As(err, &ue) && ue.Status >= 500:
		return conversation.TurnError{Code: "upstream_unavailable", Message: fmt.Sprintf("the model's provider failed (%d): %s", ue.Status, ue.Message), Retryable: true}
	case errors.As(err, &ue) && ue.Status == 424:
		return conversation.TurnError{Code: "mcp_server_failed", Message: "the model's provider could not reach an MCP server to list its tools (424): " + ue.Message + "; check the server in the settings", Retryable: true}
	case errors.As(err, &ue):
		return conversation.TurnError{Code: "upstream_rejected", Message: fmt.Sprintf("the model's provider refused the request (%d %s): %s", ue.Status, ue.Code, ue.Message), Retryable: ue.Retryable()}
	case err != nil:
		return conversation.TurnError{Code: "upstream_cut", Message: "the connection to the model broke off before the response finished; nothing after this point was received (" + err.Error() + ")", Retryable: true}
	case streamed:
		return conversation.TurnError{Code: "upstream_cut", Message: "the model's stream ended without saying that the response finished; it is not treated as complete", Retryable: true}
	}
	return conversation.TurnError{Code: "upstream_error", Message: "the request to the model failed", Retryable: true}
}

// fail ends the turn with an error event.
func (r *relay) fail(e conversation.TurnError) {
	r.end(e, conversation.EventNameError, conversation.ErrorEvent(e))
}

// end records how the turn ended without completing: an error item in the
// transcript, after the calls that began and never finished (interrupted)
// and the text of messages cut short; the approval requests it made are
// superseded, since a
// response that did not complete cannot be continued; the conversation's
// last response stays where it was.
//
// When the end cannot be stored (the database went away mid-turn), the
// whole of it is kept in memory and stored as soon as the database is
// back (keepEnding): the items the turn could not store (a call that ran,
// with its output and receipt), what the provider's response read back
// holds, how the answers it carried ended, the error item and the events.
func (r *relay) end(e conversation.TurnError, terminal string, data any) {
	t, s := r.t, r.t.s
	// The answers reached the provider in a response whose end was not
	// seen, or the provider's answer could not be stored: read it back
	// (outside the transaction) to learn what ran.
	readBack := r.response != "" && r.delivery != deliveryFinished && (len(t.answerIDs) > 0 || e.Code == conversation.CodeStorageFailed)
	var sr *conversation.StoredResponse
	if readBack {
		sr = s.keeper.ReadBack(r.store, r.response)
	}
	r.log.Flush() // the terminal event comes after every delta the turn stored
	res, err := r.storeWhole(r.store, e, terminal, data, sr)
	for _, d := range res.decided {
		r.log.Observe(conversation.EventNameDecision, d)
	}
	r.log.Observe(terminal, res.lastData)
	if res.gone && err == nil {
		return // deleted, or taken over by another replica, which ended it
	}
	if err != nil {
		// The conversation must not stay marked as streaming, and what the
		// turn learnt must not be lost: the whole end is stored once the
		// database is back, the response read back again if it was not.
		s.keepEnding(r.store, t.conv.ID, t.id, func(ctx context.Context) error {
			if readBack && sr == nil {
				sr = s.keeper.ReadBack(ctx, r.response)
			}
			_, err := r.storeWhole(ctx, e, terminal, data, sr)
			return err
		}, err)
		return
	}
	s.hub.Poke(t.conv.ID, false)
}

// ended is what storeEnd stored.
type ended struct {
	decided  []conversation.DecisionEvent
	lastData any
	gone     bool // the turn no longer runs in the conversation: nothing was written
}

// storeWhole stores the turn's end with what it kept and what was read
// back. When the database answers but refuses that (a write that can never
// succeed, not an outage), the end is stored without them, so the
// conversation does not stay streaming for good.
func (r *relay) storeWhole(ctx context.Context, e conversation.TurnError, terminal string, data any, sr *conversation.StoredResponse) (ended, error) {
	res, err := r.storeEnd(ctx, e, terminal, data, sr, true)
	if err != nil && apperr.KindOf(err) != apperr.Unavailable && (sr != nil || len(r.unstored) > 0) {
		r.t.s.log.WarnContext(ctx, "storing the end of a turn with what it received failed; storing the end alone",
			"conversation_id", r.t.conv.ID, "turn_id", r.t.id, "error", err)
		res, err = r.storeEnd(ctx, e, terminal, data, nil, false)
	}
	return res, err
}

// storeEnd writes the turn's end, in one transaction: see end. kept: with
// the items the turn received and could not store.
func (r *relay) storeEnd(ctx context.Context, e conversation.TurnError, terminal string, data any, sr *conversation.StoredResponse, kept bool) (ended, error) {
	s := r.t.s
	var res ended
	res.lastData = data
	err := s.store.Tx(ctx, func(repo conversation.Repo) error {
		res = ended{lastData: data}
		if still, err := r.stillOursCtx(ctx, repo); err != nil || !still {
			res.gone = true
			return err
		}
		return r.writeEnd(ctx, repo, e, terminal, data, sr, kept, &res)
	})
	return res, err
}

// writeEnd is storeEnd's transaction once the turn is still ours: store
// what the turn kept and what the response read back holds, supersede the
// requests it asked, keep what it left unfinished, settle the answers it
// carried, and store its end with its events. res gets what was stored.
func (r *relay) writeEnd(ctx context.Context, repo conversation.Repo, e conversation.TurnError, terminal string, data any, sr *conversation.StoredResponse, kept bool,
	res *ended) error {
	t, s := r.t, r.t.s
	var evs []conversation.NewEvent
	stored := map[string]bool{}
	var err error
	if kept {
		if evs, stored, err = r.storeKept(ctx, repo); err != nil {
			return err
		}
	}
	st, more, err := s.keeper.ApplyReadBack(ctx, repo, t.user.ID, t.conv.ID, sr, r.groups)
	if err != nil {
		return err
	}
	evs = append(evs, more...)
	for id := range stored {
		st.Known[id] = true
	}
	e = st.Explain(e)
	if _, ok := data.(conversation.TurnError); ok {
		res.lastData = e // an error event says how the turn ended, read-back included
	}
	last := mustEvent(terminal, res.lastData)
	if len(r.asked) > 0 && !st.Adopted {
		if err := r.supersedeAsked(ctx, repo, e.Code); err != nil {
			return err
		}
	}
	if err := r.keepUnfinished(ctx, repo, st.Known); err != nil {
		return err
	}
	if res.decided, err = r.settleSent(ctx, repo, e, st); err != nil {
		return err
	}
	if _, err := repo.AppendItem(ctx, t.conv.ID, conversation.Item{Type: conversation.ItemError, ID: newID("err_"), ResponseID: r.response, Error: &e}); err != nil {
		return err
	}
	if err := repo.EndTurn(ctx, t.conv.ID, t.id, st.LastResponse()); err != nil {
		return err
	}
	for _, d := range res.decided {
		evs = append(evs, mustEvent(conversation.EventNameDecision, d))
	}
	_, err = repo.AppendEvents(ctx, t.conv.ID, t.id, append(evs, last))
	return err
}

// supersedeAsked closes as superseded the requests this response asked
// that are still pending: it did not complete (code says how it ended).
func (r *relay) supersedeAsked(ctx context.Context, repo conversation.Repo, code string) error {
	t, s := r.t, r.t.s
	aps, err := repo.Approvals(ctx, t.user.ID, t.conv.ID, r.asked, true)
	if err != nil {
		return err
	}
	now := s.now()
	reason := "The response that asked did not complete (" + code + "), so this request can no longer be answered."
	for _, a := range aps {
		if a.State == conversation.Pending {
			a.State, a.DecidedAt, a.DecisionReason = conversation.Superseded, &now, &reason
			if err := repo.Decide(ctx, t.user.ID, a); err != nil {
				return err
			}
			if err := s.keeper.AuditClosed(r.store, repo, a, conversation.Pending, record.ClosedByTurnEnd, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// keepUnfinished stores what the turn left unfinished and known (the
// response read back, the items kept) does not say: calls that may or may
// not have run as interrupted, then messages cut short as partial.
func (r *relay) keepUnfinished(ctx context.Context, repo conversation.Repo, known map[string]bool) error {
	t := r.t
	for _, u := range r.running { // calls that may or may not have run
		if known[u.ID] {
			continue // the response read back (or the item kept) says how it ended
		}
		if _, err := repo.AppendItem(ctx, t.conv.ID, r.interrupted(u)); err != nil {
			return err
		}
	}
	for id, text := range r.texts { // what the browser saw of a message cut short
		if known[id] {
			continue
		}
		if _, err := repo.AppendItem(ctx, t.conv.ID, conversation.Item{Type: conversation.ItemMessage, ID: id, ResponseID: r.response, Text: text.String(), Partial: true}); err != nil {
			return err
		}
	}
	return nil
}

// storeKept stores, in the transaction that ends the turn, the items the
// turn received whole but could not store (the database failed): a call
// with its output and receipt, a message. It returns their item events and
// the ids of the items the transcript now holds.
func (r *relay) storeKept(ctx context.Context, repo conversation.Repo) ([]conversation.NewEvent, map[string]bool, error) {
	t, s := r.t, r.t.s
	kept := map[string]bool{}
	if len(r.unstored) == 0 {
		return nil, kept, nil
	}
	items, err := repo.Items(ctx, t.user.ID, t.conv.ID)
	if err != nil {
		return nil, nil, err
	}
	have := map[string]bool{}
	for _, it := range items {
		have[it.ID] = true
	}
	var evs []conversation.NewEvent
	for _, it := range r.unstored {
		kept[it.ID] = true
		if have[it.ID] {
			continue
		}
		linked, err := s.keeper.LinkCall(ctx, repo, t.conv.ID, t.id, &it)
		if err != nil {
			return nil, nil, err
		}
		stored, err := repo.AppendItem(ctx, t.conv.ID, it)
		if err != nil {
			return nil, nil, err
		}
		if linked {
			evs = append(evs, mustEvent(conversation.EventNameItem, conversation.ItemEvent{Item: stored}))
			continue
		}
		if err := s.keeper.RecordCall(ctx, repo, t.user.ID, t.user.Email, t.conv.ID, it); err != nil {
			return nil, nil, err
		}
		evs = append(evs, mustEvent(conversation.EventNameItem, conversation.ItemEvent{Item: stored}))
	}
	return evs, kept, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// maybeDelivered reports whether a request that failed may still have been
// received and acted on upstream.
func maybeDelivered(err error) bool {
	var ue *conversation.UpstreamError
	if errors.As(err, &ue) {
		// 500, 502 and 504 may come from a proxy after upstream got the
		// request; 429, 503 and 4xx mean it was not taken on.
		return ue.MaybeDelivered || ue.Status == 500 || ue.Status == 502 || ue.Status == 504
	}
	return true // cancelled in flight, or a 200 whose stream broke before its first event
}

// notice stores a notice item in the transcript and relays it; the turn
// goes on whatever happens to the write.
func (r *relay) notice(n conversation.Notice) {
	t, s := r.t, r.t.s
	it, err := s.store.Repo().AppendItem(r.store, t.conv.ID, conversation.Item{Type: conversation.ItemNotice, ID: newID("note_"), ResponseID: r.response, Notice: &n})
	if err != nil {
		s.log.WarnContext(r.store, "storing a notice failed", "conversation_id", t.conv.ID, "code", n.Code, "error", err)
		it = conversation.Item{Type: conversation.ItemNotice, ID: newID("note_"), Notice: &n, CreatedAt: s.now()}
	}
	r.sink.Send(conversation.EventNameNotice, conversation.NoticeEvent{Item: it})
}

// stillOurs locks the conversation and reports whether this turn still
// runs in it: not when it was deleted, or taken over after this replica
// lost its lease (the other replica closed it; writing its end again
// would contradict that).
func (r *relay) stillOurs(repo conversation.Repo) (bool, error) { return r.stillOursCtx(r.store, repo) }

// stillOursCtx is stillOurs with ctx.
func (r *relay) stillOursCtx(ctx context.Context, repo conversation.Repo) (bool, error) {
	c, err := repo.Conversation(ctx, r.t.user.ID, r.t.conv.ID, true)
	if apperr.KindOf(err) == apperr.NotFound {
		return false, nil
	}
	return err == nil && c.ActiveTurn == r.t.id, err
}
