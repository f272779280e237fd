package engine

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/turnlimits"
)

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
		locked, err := r.Turns.LockDecisions(ctx, u.ID, conversationID, ids)
		if err != nil {
			return err
		}
		conv, aps := locked.Conversation, locked.Approvals
		t.conv = conv
		// The policy read serves the checks below until a decision
		// remembers a policy (which changes it): then each reads again.
		// The cards read serve them all.
		read := &preRead{policies: &locked.Policies, cards: cardsOf(locked.Cards)}
		if slices.ContainsFunc(ds, func(d conversation.Decision) bool { return d.Remember || d.Wider() }) {
			read.policies = nil
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
		if err := t.claimFollowUp(ctx, r, responses, stopOf(ds) != nil); err != nil {
			return err
		}
		return t.open(ctx, r)
	})
	if errors.Is(err, errTimeUp) {
		return nil, s.refuseExpired(ctx, conversationID, late)
	}
	if err != nil {
		return nil, turnlimits.Error(s.decider.limits, err, false)
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
		if t.s.keeper.TimeIsUp(a, now) {
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
func (t *Turn) record(ctx context.Context, r conversation.Repo, read *preRead, ds []conversation.Decision, byID map[string]conversation.Approval) (map[string]bool, error) {
	s, u, conv := t.s, t.user, t.conv
	now := s.now()
	responses := map[string]bool{}
	decided := map[string]bool{}
	var cs []covering
	for _, d := range ds {
		a := byID[d.ApprovalRequestID]
		responses[a.ResponseID] = true
		decided[a.ID] = true
		ev, err := s.decider.decide(ctx, r, read, a, d, u, now)
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
	evs, err := s.decider.settle(ctx, r, u, conv.ID, responses, cs, decided, now)
	if err != nil {
		return nil, err
	}
	t.decisions = append(t.decisions, evs...)
	if stop := stopOf(ds); stop != nil {
		// The rest of the response is denied too, in this transaction:
		// none is left pending, and no follow-up is claimed.
		if evs, err = s.decider.stopRest(ctx, r, u, conv.ID, responses, *stop, decided, now); err != nil {
			return nil, err
		}
		t.decisions = append(t.decisions, evs...)
	}
	return responses, nil
}

// claimFollowUp decides, under the conversation's lock, whether these
// decisions complete their response: then this turn, and only this one,
// sends the follow-up.
//
// The per-user limits are checked by the opening (Turns.Open) of the
// follow-up it claims.
//
// stopped: a person's stop denied the rest; the turn ends here, sending
// nothing.
func (t *Turn) claimFollowUp(ctx context.Context, r conversation.Repo, responses map[string]bool, stopped bool) error {
	var last []conversation.Approval // the approval requests of the conversation's last response, as read
	for resp := range responses {
		aps, err := r.Approvals.OfResponse(ctx, t.user.ID, t.conv.ID, resp)
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
	t.previous = *t.conv.LastResponseID
	// Read above, in this transaction and locked: none is pending, and
	// nothing else decides them while the lock is held.
	if err := t.closeApprovals(ctx, r, last); err != nil {
		return err
	}
	t.claim()
	return nil
}

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
		case d.Wider() && d.Approve != nil && !*d.Approve:
			f.Add(at("scope"), "scope %q approves every tool of a server or everything from now on, so it only goes with approve: true; to deny, leave scope out", *d.Scope)
		case d.Wider() && d.Remember:
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

func decisionEvent(a conversation.Approval, change *conversation.PolicyChange) conversation.DecisionEvent {
	return conversation.DecisionEvent{ApprovalRequestID: a.ID, ServerLabel: a.ServerLabel, ToolName: a.ToolName, State: a.State,
		Reason: a.DecisionReason, Scope: a.Scope, Remember: a.Remember, Correction: shownCorrection(a.StoredCorrection),
		PolicyChanged: change, Stopped: a.Stopped, DecidedAt: deref(a.DecidedAt),
		DecidedBy: a.DecidedBy, DecidedByID: a.DecidedByID,
		PendingApprovalIDs: []string{}, Rules: a.Rules}
}
