package engine

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/record"
	"github.com/toolgate/toolgate/internal/policy"
)

// SupersededReason is sent upstream for a request the person did not answer
// because they wrote a new message instead.
const SupersededReason = "The user sent a new message instead of answering this approval request, so it was not approved."

// interruptedReason closes a request whose answer already reached upstream in
// a response that broke off: it must not run a second time.
const interruptedReason = "This request was already answered in an earlier response that was interrupted; it must not run again."

// Turn is one prepared turn: the conversation is marked as running it, and
// Run sends it upstream (or, for decisions while others are pending, only
// reports them) and relays the answer.
type Turn struct {
	s          *Service
	user       auth.User // the caller: the conversation's owner
	conv       conversation.Conversation
	id         string
	kind       string // "message" or "decisions"
	userItem   *conversation.Item
	decisions  []conversation.DecisionEvent
	claimed    bool // the conversation is marked as running this turn
	previous   string
	userText   string
	answers    []conversation.Answer
	answerIDs  []string
	grants     map[string]map[string]policy.GrantRef
	pendingIDs []string // with no follow-up: the requests still waiting
	after      int64    // the id just before the turn's first event
	// policies is the policy read of the turn's first request, made by the
	// statement that opened the turn (openingRepo); nil once used.
	policies *policy.Read
	// dbNow is the database's clock when the message's turn locked the
	// previous response's requests: a pending one whose time is up then
	// is expired, not superseded. Zero: not known (none is judged so).
	dbNow time.Time
	// expired are the requests closeApprovals expired (for the metric,
	// once the turn's opening is committed).
	expired []conversation.Approval
	// opened is the turn's opening events as stored (after commit, Follow
	// hands them to its stream from memory).
	opened []conversation.StoredEvent
	// stopped is how a turn a person's stop ended ends (no follow-up);
	// nil otherwise.
	stopped *conversation.TurnError
}

// openingRepo is r for logOpening: its OpenTurn also makes the policy read
// of the turn's first request (policy_version and the owner's personal
// policies) and keeps it on the turn, so the request leaves without a
// statement of its own after the commit.
type openingRepo struct {
	conversation.Repo
	t *Turn
}

func (o openingRepo) OpenTurn(ctx context.Context, op conversation.TurnOpening) (int64, []conversation.Grant, error) {
	rd := &policy.Read{}
	op.Policies = rd
	last, gs, err := o.Repo.OpenTurn(ctx, op)
	if err == nil {
		o.t.policies = rd
	}
	return last, gs, err
}

// open is logOpening with the policy read folded into the opening.
func (t *Turn) open(ctx context.Context, r conversation.Repo) error {
	return t.logOpening(ctx, openingRepo{Repo: r, t: t})
}

// ConversationID is the conversation the turn belongs to.
func (t *Turn) ConversationID() string { return t.conv.ID }

// StartMessage records the person's message and prepares its turn. With no
// conversation id, a new conversation is created. Approval requests still
// pending are superseded: denied upstream, in the same request as the
// message, with a reason saying so.
func (s *Service) StartMessage(ctx context.Context, conversationID, input string) (*Turn, error) {
	u, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	input = strings.TrimSpace(stripNUL(input))
	switch {
	case input == "":
		return nil, apperr.Invalidf("invalid_input", "input", "input is required: the message to send to the model")
	case utf8.RuneCountInString(input) > conversation.MaxInputLen:
		return nil, apperr.Invalidf("invalid_input", "input", "input must be at most %d characters", conversation.MaxInputLen)
	}
	t := &Turn{s: s, user: u, id: newID("turn_"), kind: "message", userText: input}
	err = s.store.Tx(ctx, func(r conversation.Repo) error {
		// One round trip: the conversation locked (or created), the load
		// the limits count, the last response's requests, the message.
		// What it wrote is rolled back if the checks below refuse.
		m := conversation.MessageStart{Owner: u.ID, ConversationID: conversationID, Item: conversation.Item{Type: conversation.ItemUserMessage, ID: newID("umsg_"), Text: input}}
		if conversationID == "" {
			// In this transaction: a message refused by a limit leaves no
			// empty conversation behind.
			m.NewID, m.Title = newID("conv_"), titleFrom(input)
		}
		if s.limited(true) {
			m.LoadWindow = messageWindow
		}
		st, err := r.StartMessage(ctx, m)
		if err != nil {
			return err
		}
		conv := st.Conversation
		if conversationID != "" && conv.Streaming {
			return turnInProgress(conv.ID)
		}
		if st.Load != nil {
			if err := s.judgeLoad(*st.Load, true); err != nil {
				return err
			}
		}
		t.conv = conv
		if conv.LastResponseID != nil {
			t.previous = *conv.LastResponseID
			t.dbNow = st.Now
			if err := t.closeApprovals(ctx, r, st.Previous); err != nil {
				return err
			}
		}
		if conv.Title == "" {
			if conv, err = r.RenameConversation(ctx, u.ID, conv.ID, titleFrom(input)); err != nil {
				return err
			}
			t.conv = conv
		}
		item := st.Item
		t.userItem = &item
		t.claim()
		return t.open(ctx, r)
	})
	if err != nil {
		return nil, err
	}
	for _, a := range t.expired {
		s.observer.ApprovalExpired(a.ID, deref(a.DecidedAt))
	}
	return t, nil
}

// closeOpen answers every approval request of the previous response whose
// answer has not reached upstream: upstream refuses a follow-up that leaves
// one open. Pending ones are superseded; decided ones whose follow-up never
// got through are sent with their decision; ones already answered in an
// interrupted response are denied so they cannot run twice.
func (t *Turn) closeOpen(ctx context.Context, r conversation.Repo) error {
	aps, err := r.ResponseApprovals(ctx, t.user.ID, t.conv.ID, t.previous)
	if err != nil {
		return err
	}
	return t.closeApprovals(ctx, r, aps)
}

// closeApprovals is closeOpen over aps, the approval requests of the
// previous response as ResponseApprovals read them (locked) in r.
func (t *Turn) closeApprovals(ctx context.Context, r conversation.Repo, aps []conversation.Approval) error {
	now := t.s.now()
	for _, a := range aps {
		ans := conversation.Answer{ApprovalRequestID: a.ID, ServerLabel: a.ServerLabel, UpstreamLabel: a.UpstreamLabel, ToolName: a.ToolName}
		switch {
		case a.State == conversation.NotRun:
			// It provably did not run (gateway mode): the model is told so,
			// and may ask again.
			ans.Reason = deref(a.DecisionReason)
		case a.AnsweredIn != nil || a.SentInTurn != nil || a.State == conversation.OutcomeUnknown:
			ans.Reason = interruptedReason
		case a.State == conversation.Pending && !t.dbNow.IsZero() && t.s.timeIsUp(a, t.dbNow):
			// Its time was up before the message came: expired, as the
			// sweep (which had not run yet) would have recorded it.
			reason := t.s.expiredReason(a)
			a.State, a.DecidedAt, a.DecisionReason = conversation.Expired, &now, &reason
			a.DecidedBy, a.DecidedByID = nil, nil
			if err := r.Decide(ctx, t.user.ID, a); err != nil {
				return err
			}
			if err := t.s.keeper.AuditClosed(ctx, r, a, conversation.Pending, record.ClosedByExpiry, nil); err != nil {
				return err
			}
			ans.Reason = reason
			t.decisions = append(t.decisions, decisionEvent(a, nil))
			t.expired = append(t.expired, a)
		case a.State == conversation.Pending:
			reason := SupersededReason
			a.State, a.DecidedAt, a.DecisionReason = conversation.Superseded, &now, &reason
			a.DecidedBy, a.DecidedByID = &t.user.Email, &t.user.ID
			if err := r.Decide(ctx, t.user.ID, a); err != nil {
				return err
			}
			if err := t.s.keeper.AuditClosed(ctx, r, a, conversation.Pending, record.ClosedByMessage, &t.user); err != nil {
				return err
			}
			ans.Reason = reason
			t.decisions = append(t.decisions, decisionEvent(a, nil))
		default:
			ans.Approve = a.State == conversation.Approved
			ans.Reason = upstreamReason(a) // the person's reason, after a correction's
		}
		t.answers = append(t.answers, ans)
		t.answerIDs = append(t.answerIDs, a.ID)
	}
	return nil
}

// StartDecisions records decisions on approval requests. When they leave
// no request of their response pending, the turn sends exactly one
// follow-up carrying an answer for each; otherwise it only reports what is
// still pending. Decisions on requests that are not pending are refused
// whole, with their current state: nothing is recorded.
func (s *Service) StartDecisions(ctx context.Context, conversationID string, ds []conversation.Decision) (*Turn, error) {
	u, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := validateDecisions(ds); err != nil {
		return nil, err
	}
	if err := validStop(ds); err != nil {
		return nil, err
	}
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ApprovalRequestID
	}
	t := &Turn{s: s, user: u, id: newID("turn_"), kind: "decisions"}
	var late []conversation.Approval // asked to be decided, but out of time
	err = s.store.Tx(ctx, func(r conversation.Repo) error {
		late = nil
		var window time.Duration
		if s.limited(false) {
			// Counted now, in the same round trip, judged if these
			// decisions complete their response (claimFollowUp).
			window = messageWindow
		}
		locked, err := r.LockDecisions(ctx, u.ID, conversationID, ids, window)
		if err != nil {
			return err
		}
		conv, aps := locked.Conversation, locked.Approvals
		t.conv = conv
		// The policy read serves the checks below until a decision
		// remembers a policy (which changes it): then each reads again.
		read := &locked.Policies
		if slices.ContainsFunc(ds, func(d conversation.Decision) bool { return d.Remember || wider(d) }) {
			read = nil
		}
		byID := map[string]conversation.Approval{}
		for _, a := range aps {
			byID[a.ID] = a
		}
		if late, err = t.decidable(ids, byID, locked.Now); err != nil {
			return err
		}
		responses, err := t.record(ctx, r, read, ds, byID)
		if err != nil {
			return err
		}
		if err := t.claimFollowUp(ctx, r, responses, locked.Load, stopOf(ds) != nil); err != nil {
			return err
		}
		return t.open(ctx, r)
	})
	if errors.Is(err, errTimeUp) {
		return nil, s.refuseExpired(ctx, conversationID, late)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// decidable checks, under the locks, that every request ids names is in
// t's conversation, pending and in time (late: those out of time, then
// errTimeUp), that no turn streams, and that each is of the conversation's
// last response.
func (t *Turn) decidable(ids []string, byID map[string]conversation.Approval, now time.Time) (late []conversation.Approval, err error) {
	conv := t.conv
	for _, id := range ids {
		a, ok := byID[id]
		if !ok {
			return late, apperr.NotFoundf("approval_not_found", "conversation %q has no approval request %q", conv.ID, id)
		}
		if a.State != conversation.Pending {
			return late, notPending(a)
		}
		// Judged against the database's clock, under the locks the
		// sweep takes too: either the sweep expired it first (not
		// pending above) or no decision is recorded on it now.
		if t.s.timeIsUp(a, now) {
			late = append(late, a)
		}
	}
	if len(late) > 0 {
		return late, errTimeUp
	}
	if conv.Streaming {
		return late, turnInProgress(conv.ID)
	}
	for _, id := range ids {
		if a := byID[id]; conv.LastResponseID == nil || a.ResponseID != *conv.LastResponseID {
			// Left by a response that never completed; Recover and the
			// turn's end supersede these, this guards the gap.
			a.State = conversation.Superseded
			return late, notPending(a)
		}
	}
	return late, nil
}

// record records the decisions ds on the requests of byID, then what a
// grant, an "always" or a stop decides with them, in the caller's
// transaction; it returns the responses they belong to. read is as decide
// takes it.
func (t *Turn) record(ctx context.Context, r conversation.Repo, read *policy.Read, ds []conversation.Decision, byID map[string]conversation.Approval) (map[string]bool, error) {
	s, u, conv := t.s, t.user, t.conv
	now := s.now()
	responses := map[string]bool{}
	decided := map[string]bool{}
	var cs []covering
	for _, d := range ds {
		a := byID[d.ApprovalRequestID]
		responses[a.ResponseID] = true
		decided[a.ID] = true
		ev, err := s.decide(ctx, r, read, a, d, u, now)
		if err != nil {
			return nil, err
		}
		t.decisions = append(t.decisions, ev)
		if covers(d) {
			cs = append(cs, covering{a: a, d: d})
		}
	}
	// A grant, or approve/deny always, decides the other pending
	// requests of its tool in these responses too, in this transaction.
	evs, err := s.settle(ctx, r, u, conv.ID, responses, cs, decided, now)
	if err != nil {
		return nil, err
	}
	t.decisions = append(t.decisions, evs...)
	if stop := stopOf(ds); stop != nil {
		// The rest of the response is denied too, in this transaction:
		// none is left pending, and no follow-up is claimed.
		if evs, err = s.stopRest(ctx, r, u, conv.ID, responses, *stop, decided, now); err != nil {
			return nil, err
		}
		t.decisions = append(t.decisions, evs...)
	}
	return responses, nil
}

// decide records one decision with what it implies: a remembered policy
// (the decider's personal one), an allowance for the conversation, an
// audit entry. read, when not nil, is the policy read made in r's
// transaction (no personal policy changed since); nil reads again.
func (s *Service) decide(ctx context.Context, r conversation.Repo, read *policy.Read, a conversation.Approval, d conversation.Decision, u auth.User, now time.Time) (conversation.DecisionEvent, error) {
	a.State = conversation.Denied
	if *d.Approve {
		a.State = conversation.Approved
		if err := approvable(ctx, s.policies, r, read, a, d, u.ID); err != nil {
			return conversation.DecisionEvent{}, err
		}
	}
	if err := s.choiceAllowed(ctx, r, a, d); err != nil {
		return conversation.DecisionEvent{}, err
	}
	correction, cerr := s.correction(ctx, a, d)
	if cerr != nil {
		return conversation.DecisionEvent{}, cerr
	}
	a.StoredCorrection, a.Stopped = correction, d.Stop
	a.DecidedAt, a.DecidedBy, a.DecidedByID, a.Remember = &now, &u.Email, &u.ID, d.Remember
	if d.Reason != nil && strings.TrimSpace(stripNUL(*d.Reason)) != "" {
		reason := strings.TrimSpace(stripNUL(*d.Reason))
		a.DecisionReason = &reason
	}
	scope := conversation.ScopeOnce
	if d.Scope != nil {
		scope = *d.Scope
	}
	a.Scope = &scope
	if err := r.Decide(ctx, u.ID, a); err != nil {
		return conversation.DecisionEvent{}, err
	}
	var change *conversation.PolicyChange
	if d.Remember {
		p := policy.Blocked
		if *d.Approve {
			p = policy.Never
		}
		if err := s.policies.Remember(ctx, r, u, a.ServerLabel, a.ToolName, p); err != nil {
			return conversation.DecisionEvent{}, err
		}
		change = &conversation.PolicyChange{ServerLabel: a.ServerLabel, ToolName: a.ToolName, Policy: string(p), Layer: conversation.LayerUser}
	}
	audited := map[string]any{"approval_request_id": a.ID, "conversation_id": a.ConversationID,
		"state": a.State, "reason": a.DecisionReason, "scope": scope, "remember": d.Remember, "by": "person"}
	if wider(d) && *d.Approve {
		c, w, err := s.widen(ctx, r, u, a, d)
		if err != nil {
			return conversation.DecisionEvent{}, err
		}
		change = c
		maps.Copy(audited, w)
	}
	if g := s.grantFor(a, d, now); g != nil {
		if err := r.AddGrant(ctx, u.ID, *g); err != nil {
			return conversation.DecisionEvent{}, err
		}
		audited["grant_id"], audited["expires_at"] = g.ID, g.ExpiresAt
	}
	if d.CoveredBy != "" {
		audited["covered_by"] = d.CoveredBy
	}
	if d.Stop {
		audited["stopped"] = true
	}
	audited["correction"] = shownCorrection(a.StoredCorrection)
	after, _ := json.Marshal(audited)
	before, _ := json.Marshal(map[string]any{"approval_request_id": a.ID, "state": conversation.Pending})
	err := s.policies.Audit(ctx, r, policy.AuditEntry{Actor: u.Email, ActorID: u.ID, Action: policy.ActionDecision,
		ServerLabel: &a.ServerLabel, ToolName: &a.ToolName, Before: before, After: after})
	return decisionEvent(a, change), err
}

// approvable checks that approving a (d) is allowed by its tool's policy
// now, read from read (nil: read again in r for user): not above an
// admin's lock at Ask, and not blocked since it asked.
func approvable(ctx context.Context, p conversation.Policies, r conversation.Repo, read *policy.Read, a conversation.Approval, d conversation.Decision, user string) error {
	var res policy.Resolution
	var err error
	if read != nil {
		res, err = p.ResolveAt(ctx, *read, a.ServerLabel, a.ToolName)
	} else {
		res, err = p.Resolve(ctx, r, user, a.ServerLabel, a.ToolName)
	}
	if err != nil {
		return err
	}
	if err := lockedAtAsk(res, a, d); err != nil {
		return err
	}
	if !d.Remember && res.Policy == policy.Blocked {
		// Blocked since it asked (settings changed, server disabled or
		// removed): blocked means never run, so an approval cannot
		// override it; remembering the approval changes the policy.
		return apperr.New(apperr.Conflict, "tool_blocked",
			"%s on server %s is blocked (or its server is disabled or gone) since it asked, so it cannot be approved; deny it, or, if your own policy blocks it, approve with remember: true to allow it for you from now on",
			a.ToolName, a.ServerLabel)
	}
	return nil
}

// lockedAtAsk refuses an approval d that would loosen an admin's lock at
// Ask on a's tool (res, read when the person decides): a grant (scope
// conversation or hour) or a remembered approval. A locked Ask asks every
// time, so it can be approved once, or denied.
func lockedAtAsk(res policy.Resolution, a conversation.Approval, d conversation.Decision) error {
	if res.AskLock == "" || !*d.Approve || (!d.Remember && (d.Scope == nil || *d.Scope == conversation.ScopeOnce)) {
		return nil
	}
	what := map[policy.Source]string{policy.FromTool: "its workspace policy", policy.FromServer: "server " + a.ServerLabel + "'s default policy",
		policy.FromGlobal: "the global default policy"}[res.AskLock]
	return apperr.New(apperr.Forbidden, "policy_locked",
		"%s on server %s is locked at Ask by an admin (%s): every call asks, so it can only be approved once (no scope, or scope \"once\", without remember) or denied; nothing was recorded",
		a.ToolName, a.ServerLabel, what)
}

// claimFollowUp decides, under the conversation's lock, whether these
// decisions complete their response: then this turn, and only this one,
// sends the follow-up.
//
// load is the user's load counted (under its lock) when the transaction
// began; nil when it was not.
//
// stopped: a person's stop denied the rest; the turn ends here, sending
// nothing.
func (t *Turn) claimFollowUp(ctx context.Context, r conversation.Repo, responses map[string]bool, load *conversation.UserLoad, stopped bool) error {
	var last []conversation.Approval // the approval requests of the conversation's last response, as read
	for resp := range responses {
		aps, err := r.ResponseApprovals(ctx, t.user.ID, t.conv.ID, resp)
		if err != nil {
			return err
		}
		if t.conv.LastResponseID != nil && resp == *t.conv.LastResponseID {
			last = aps
		}
		for _, a := range aps {
			if a.State == conversation.Pending {
				t.pendingIDs = append(t.pendingIDs, a.ID)
			}
		}
	}
	for i := range t.decisions {
		t.decisions[i].PendingApprovalIDs = nonNil(slices.Clone(t.pendingIDs))
	}
	if stopped {
		return t.endStopped(ctx, r, t.stoppedDenials())
	}
	if len(t.pendingIDs) > 0 || t.conv.LastResponseID == nil || !responses[*t.conv.LastResponseID] {
		// Still waiting; or the decisions belong to a response that is
		// not the conversation's last (it failed or was cut off), which
		// cannot be continued.
		return nil
	}
	if load != nil {
		if err := t.s.judgeLoad(*load, false); err != nil {
			return err
		}
	} else if err := t.s.checkLimits(ctx, r, t.user, false); err != nil {
		return err
	}
	t.previous = *t.conv.LastResponseID
	// Read above, in this transaction and locked: none is pending, and
	// nothing else decides them while the lock is held.
	if err := t.closeApprovals(ctx, r, last); err != nil {
		return err
	}
	t.claim()
	return nil
}

// claim makes the turn the one that runs in the conversation, under the
// lock the caller's transaction holds: logOpening, which follows, records
// the claim, the answers it carries and its opening events in one statement.
func (t *Turn) claim() { t.claimed = true }

func validateDecisions(ds []conversation.Decision) error {
	if len(ds) == 0 {
		return apperr.Invalidf("invalid_decisions", "decisions", "give a decision: approval_request_id and approve, or a non-empty decisions array")
	}
	f := apperr.Fields{}
	seen := map[string]bool{}
	for i, d := range ds {
		at := func(field string) string {
			if len(ds) == 1 {
				return field
			}
			return "decisions[" + strconv.Itoa(i) + "]." + field
		}
		switch {
		case d.ApprovalRequestID == "":
			f.Add(at("approval_request_id"), "approval_request_id is required: the id of the approval request (mcpr_...)")
		case seen[d.ApprovalRequestID]:
			f.Add(at("approval_request_id"), "approval request %q is decided twice in one request", d.ApprovalRequestID)
		}
		seen[d.ApprovalRequestID] = true
		if d.Approve == nil {
			f.Add(at("approve"), "approve is required: true to run the tool, false to deny it")
		}
		if d.Reason != nil && utf8.RuneCountInString(*d.Reason) > conversation.MaxReasonLen {
			f.Add(at("reason"), "reason must be at most %d characters", conversation.MaxReasonLen)
		}
		switch {
		case d.Scope != nil && !validScope(*d.Scope):
			f.Add(at("scope"), "scope must be \"once\", \"conversation\", \"hour\", \"server\" or \"everything\" (got %q)", *d.Scope)
		case wider(d) && d.Approve != nil && !*d.Approve:
			f.Add(at("scope"), "scope %q approves every tool of a server or everything from now on, so it only goes with approve: true; to deny, leave scope out", *d.Scope)
		case wider(d) && d.Remember:
			f.Add(at("scope"), "scope %q changes the workspace's default policy, remember: true your own policy for the tool; give one of them", *d.Scope)
		case d.Scope != nil && *d.Scope != conversation.ScopeOnce && d.Approve != nil && !*d.Approve:
			f.Add(at("scope"), "scope %q allows a tool for a while (a grant), so it only goes with approve: true; to deny every time, use remember: true", *d.Scope)
		}
	}
	return f.Err("invalid_decision", "nothing was recorded: "+f.Join())
}

func notPending(a conversation.Approval) error {
	a = present(a)
	e := apperr.New(apperr.Conflict, "approval_already_decided", "approval request %q was already %s", a.ID, a.State)
	if a.State == conversation.Superseded {
		e = apperr.New(apperr.Conflict, "approval_superseded",
			"approval request %q was %s by a newer message and can no longer be decided", a.ID, a.State)
	}
	e.Details = map[string]any{"approval": a}
	return e
}

func turnInProgress(id string) error {
	return apperr.New(apperr.Conflict, "turn_in_progress",
		"a turn is streaming in conversation %q; wait for it to finish or cancel it (POST /api/conversations/%s/cancel)", id, id)
}

func decisionEvent(a conversation.Approval, change *conversation.PolicyChange) conversation.DecisionEvent {
	return conversation.DecisionEvent{ApprovalRequestID: a.ID, ServerLabel: a.ServerLabel, ToolName: a.ToolName, State: a.State,
		Reason: a.DecisionReason, Scope: a.Scope, Remember: a.Remember, Correction: shownCorrection(a.StoredCorrection),
		PolicyChanged: change, Stopped: a.Stopped, DecidedAt: deref(a.DecidedAt),
		DecidedBy: a.DecidedBy, DecidedByID: a.DecidedByID,
		PendingApprovalIDs: []string{}, Rules: a.Rules}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// stripNUL removes NUL characters, which Postgres text cannot hold and no
// person means to type.
func stripNUL(s string) string { return conversation.StripNUL(s) }

// IdempotencyKey is the Idempotency-Key a request holds (internal/http):
// the turn it starts records itself on it (Repo.ClaimIdempotencyKey).
type IdempotencyKey struct {
	Key    string
	Holder string // the reservation that holds it
}

type idempotencyKeyCtx struct{}

// WithIdempotencyKey says that the turn started with ctx is the one of the
// request holding k.
func WithIdempotencyKey(ctx context.Context, k IdempotencyKey) context.Context {
	return context.WithValue(ctx, idempotencyKeyCtx{}, k)
}
