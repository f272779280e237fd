package agentgate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/hooks"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/rules"
)

// A held call's lease (held_until): renewed every holdRenew while the call
// waits, for holdLease from then. Past it, the sweep withdraws the request.
const (
	holdLease = 30 * time.Second
	holdRenew = 5 * time.Second
)

// Hold makes call an approval request of its session's conversation and
// waits for its decision. The decision hooks are asked first, then the
// argument rules, as for a chat's request; what they decide needs no card.
func (s *Service) Hold(ctx context.Context, call gateway.Call, h gateway.HoldHooks) (gateway.HoldOutcome, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return gateway.HoldOutcome{}, err
	}
	a, err := s.request(ctx, u, call)
	if err != nil {
		return gateway.HoldOutcome{}, err
	}
	if err := s.store.Tx(ctx, func(r conversation.Repo) error { return s.ask(ctx, r, u, &a) }); err != nil {
		return gateway.HoldOutcome{}, err
	}
	s.poke(a.ConversationID)
	o := outcome(a)
	if a.State == conversation.Pending {
		s.log.InfoContext(ctx, "mcp agent face: call held for a decision", "approval_request_id", a.ID, "conversation_id", a.ConversationID,
			"server", a.ServerLabel, "tool", a.ToolName)
		if o, err = s.wait(ctx, u, a, h); err != nil {
			return o, err
		}
	}
	if o.Refusal != nil {
		s.receipt(context.WithoutCancel(ctx), u, call, o)
	}
	return o, nil
}

// receipt writes the receipt of a held call that did not run (denied,
// expired, withdrawn), naming its request: the call's one record. A call
// that runs gets its receipt from the Gate, on its approval. A failure here
// is logged: the request already says how it ended.
func (s *Service) receipt(ctx context.Context, u auth.User, call gateway.Call, o gateway.HoldOutcome) {
	c := call.Claims
	id := o.ApprovalRequestID
	rec := conversation.GatewayCall{ID: conversation.NewID("gwc_"), Via: conversation.ViaGateway, ConversationID: c.ConversationID,
		TurnID: c.TurnID, ServerLabel: c.ServerLabel, ToolName: call.ToolName, StoredArguments: string(redacted(call.Arguments)),
		ArgumentsSHA256: call.ArgumentsSHA256, ApprovalRequestID: &id, State: conversation.CallRefused, Refusal: o.Refusal}
	if call.Definition != nil {
		rec.DefinitionDigest = call.Definition.Digest()
	}
	if c.Client != nil {
		rec.Client = &conversation.ClientInfo{Name: c.Client.Name, Title: c.Client.Title, Version: c.Client.Version}
	}
	err := s.store.Tx(ctx, func(r conversation.Repo) error {
		if _, err := r.Calls.Insert(ctx, rec); err != nil {
			return err
		}
		return s.keeper.AuditCall(ctx, r, u.ID, u.Email, rec)
	})
	if err != nil {
		s.log.WarnContext(ctx, "the receipt of a held call that did not run could not be written", "approval_request_id", id, "error", err)
	}
}

// request is the approval request of a held call, as a chat's would be.
func (s *Service) request(ctx context.Context, u auth.User, call gateway.Call) (conversation.Approval, error) {
	c := call.Claims
	a := conversation.Approval{ID: conversation.NewID("mcpr_"), ConversationID: c.ConversationID, ResponseID: c.TurnID,
		ServerLabel: c.ServerLabel, UpstreamLabel: c.ServerLabel, ToolName: call.ToolName, State: conversation.Pending,
		RequestedAt: s.now(), ArgumentsSHA256: call.ArgumentsSHA256}
	a.StoredArguments = string(redacted(call.Arguments))
	a.Annotations = []byte("{}")
	if call.Definition != nil {
		a.DefinitionDigest = call.Definition.Digest()
		if b, err := json.Marshal(call.Definition.Annotations); err == nil {
			a.Annotations = b
		}
	}
	res, err := s.policies.Decisions.Resolve(ctx, s.store.Repo(), u.ID, a.ServerLabel, a.ToolName)
	if err != nil {
		return a, err
	}
	a.Reason = conversation.AskReason{Policy: policy.Always, Source: res.Source}
	if res.AskLock != "" {
		lock := res.AskLock
		a.AskLock = &lock
	}
	card, err := s.policies.Decisions.Card(ctx, s.store.Repo(), a.ServerLabel, a.ToolName)
	if err != nil {
		return a, err
	}
	a.ApprovalText, a.Choices = card.Text, card.Choices
	a.Rules = s.check(ctx, u, a, call)
	return a, nil
}

// redacted is raw with its secrets hidden, as a request stores it.
func redacted(raw []byte) []byte {
	b, _ := conversation.Redact(string(raw))
	return b
}

// check asks the decision hooks, then the argument rules: what they
// decided (By set), or what the card should say they found (nil: nothing
// applies).
func (s *Service) check(ctx context.Context, u auth.User, a conversation.Approval, call gateway.Call) *conversation.RuleCheck {
	shown := conversation.Present(a)
	d, err := s.policies.Decisions.ByHooks(ctx, u, policy.HookCall{Server: a.ServerLabel, Tool: a.ToolName, Arguments: shown.Arguments,
		Redacted: shown.Redacted, ConversationID: a.ConversationID, ApprovalRequestID: a.ID})
	if err == nil && (d.Decision == hooks.Approve || d.Decision == hooks.Deny) {
		ref := &conversation.HookRef{Scope: d.Hook, Reason: d.Reason}
		if d.Hook == hooks.HookServer {
			ref.ServerLabel = a.ServerLabel
		}
		return &conversation.RuleCheck{By: "hook", Decision: string(d.Decision), Hook: ref, Clamped: d.Clamped}
	}
	var args map[string]any
	_ = json.Unmarshal(call.Arguments, &args)
	rd, err := s.policies.Decisions.ByRules(ctx, s.store.Repo(), u, a.ServerLabel, a.ToolName, args)
	if err != nil {
		return &conversation.RuleCheck{Decision: string(rules.Ask), Error: "the rules could not be read: " + err.Error()}
	}
	if rd.Scope == "" {
		return nil
	}
	c := &conversation.RuleCheck{Checked: rd.Checked, Decision: string(rd.Decision), Error: rd.Error, Clamped: rd.Clamped,
		Rule: &conversation.RuleRef{Scope: string(rd.Scope), Index: rd.Index, When: rd.When, Decision: string(rd.Decision), Reason: rd.Reason}}
	switch rd.Scope {
	case rules.ScopeTool:
		c.Rule.ServerLabel, c.Rule.ToolName = a.ServerLabel, a.ToolName
	case rules.ScopeServer:
		c.Rule.ServerLabel = a.ServerLabel
	}
	if c.Error == "" && (rd.Decision == rules.Approve || rd.Decision == rules.Deny) {
		c.By = "rule"
	}
	return c
}

// ask stores the request (bound to its call: sent_in_turn is the call's
// id) with its approval.required event, or, when a hook or rule decided,
// with that decision, its audit entry and decision.recorded.
func (s *Service) ask(ctx context.Context, r conversation.Repo, u auth.User, a *conversation.Approval) error {
	if err := r.Approvals.Insert(ctx, *a); err != nil {
		return err
	}
	if err := r.Approvals.MarkSent(ctx, []string{a.ID}, a.ResponseID); err != nil {
		return err
	}
	if err := r.Approvals.Hold(ctx, a.ID, holdLease); err != nil {
		return err
	}
	if a.Rules == nil || a.Rules.By == "" {
		if a.Rules != nil {
			a.Reason.Reason = policy.ReasonRules
		}
		_, err := r.Events.Append(ctx, a.ConversationID, "", []conversation.NewEvent{
			event(conversation.EventNameApproval, s.keeper.WithExpiry(conversation.Present(*a)))})
		return err
	}
	now, reason, scope := s.now(), autoReason(a.Rules), conversation.ScopeOnce
	a.State, a.DecidedAt, a.DecisionReason, a.Scope = conversation.Denied, &now, &reason, &scope
	if a.Rules.Decision == string(rules.Approve) {
		a.State = conversation.Approved
	}
	if err := r.Approvals.Decide(ctx, u.ID, *a); err != nil {
		return err
	}
	if err := s.audit(ctx, r, "toolgate", "", *a, map[string]any{"rules": a.Rules, "by": a.Rules.By}); err != nil {
		return err
	}
	_, err := r.Events.Append(ctx, a.ConversationID, "", []conversation.NewEvent{event(conversation.EventNameDecision, s.keeper.Decision(*a))})
	return err
}

// autoReason says why a hook or rule decided.
func autoReason(c *conversation.RuleCheck) string {
	verb := "Approved"
	if c.Decision == string(rules.Deny) {
		verb = "Denied"
	}
	if c.By == "hook" {
		r := verb + " by a decision hook"
		if c.Hook != nil && c.Hook.Reason != "" {
			r += ": " + c.Hook.Reason
		}
		return r
	}
	r := fmt.Sprintf("%s by rule %d: %s", verb, c.Rule.Index+1, c.Rule.When)
	if c.Rule.Reason != "" {
		r += " (" + c.Rule.Reason + ")"
	}
	return r
}

// audit records a decision (or closing) of a held call's request.
func (s *Service) audit(ctx context.Context, r conversation.Repo, actor, actorID string, a conversation.Approval, extra map[string]any) error {
	after := map[string]any{"approval_request_id": a.ID, "conversation_id": a.ConversationID, "state": a.State,
		"reason": a.DecisionReason, "held_call": true}
	for k, v := range extra {
		after[k] = v
	}
	b, _ := json.Marshal(after)
	before, _ := json.Marshal(map[string]any{"approval_request_id": a.ID, "state": conversation.Pending})
	return s.policies.Decisions.Audit(ctx, r, policy.AuditEntry{Actor: actor, ActorID: actorID, Action: policy.ActionDecision,
		ServerLabel: &a.ServerLabel, ToolName: &a.ToolName, Before: before, After: b, ConversationID: a.ConversationID})
}

// outcome is what a decided request means for its held call.
func outcome(a conversation.Approval) gateway.HoldOutcome {
	o := gateway.HoldOutcome{ApprovalRequestID: a.ID}
	reason := ""
	if a.DecisionReason != nil {
		reason = *a.DecisionReason
	}
	switch a.State {
	case conversation.Approved:
		o.Approved = true
	case conversation.Denied:
		msg := "The person denied this call, so it did not run."
		if a.DecidedBy != nil && *a.DecidedBy != "" {
			msg = fmt.Sprintf("%s denied this call, so it did not run.", *a.DecidedBy)
		}
		if a.Rules != nil && a.Rules.By != "" {
			msg = "This call was denied without asking, so it did not run."
		}
		if reason != "" {
			msg += " Reason: " + reason
		}
		if c := conversation.ShownCorrection(a.StoredCorrection); len(c) > 0 {
			msg += " Call it again with these arguments instead: " + string(c)
		}
		o.Refusal = &gateway.Refusal{Code: gateway.RefusedDenied, Message: msg}
	case conversation.Expired:
		o.Refusal = &gateway.Refusal{Code: gateway.RefusedExpired, Message: "Nobody decided on this call in time, so it did not run. " + reason}
	default:
		o.Refusal = &gateway.Refusal{Code: gateway.RefusedWithdrawn, Message: "This call's approval request was withdrawn, so it did not run. " + reason}
	}
	return o
}

// wait polls the request until it is decided, runs out of time, the hold
// outlasts its limit or ctx ends; the person's client is asked meanwhile
// when it can be.
func (s *Service) wait(ctx context.Context, u auth.User, a conversation.Approval, h gateway.HoldHooks) (gateway.HoldOutcome, error) {
	start := s.now()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if h.Ask != nil {
		go s.askClient(wctx, u, a, h)
	}
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	lastProgress, lastRenew := start, start
	for {
		select {
		case <-ctx.Done():
			return s.withdraw(context.WithoutCancel(ctx), u, a, "the client went away before anyone decided")
		case <-tick.C:
		}
		cur, _, err := s.store.Repo().Approvals.Owned(ctx, u.ID, a.ID, false)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			return gateway.HoldOutcome{}, err
		}
		if cur.State != conversation.Pending {
			return outcome(cur), nil
		}
		now := s.now()
		switch {
		case s.keeper.TimeIsUp(cur, now):
			return s.close(context.WithoutCancel(ctx), u, cur, conversation.Expired, s.keeper.ExpiredReason(cur))
		case now.Sub(start) >= s.hold:
			return s.withdraw(context.WithoutCancel(ctx), u, cur,
				fmt.Sprintf("nobody decided within the hold limit (MCP_HOLD_TIMEOUT, %s); call again to ask again", s.hold))
		}
		if now.Sub(lastRenew) >= holdRenew {
			lastRenew = now
			if err := s.store.Repo().Approvals.Hold(ctx, a.ID, holdLease); err != nil {
				s.log.WarnContext(ctx, "renewing a held call's lease failed", "approval_request_id", a.ID, "error", err)
			}
		}
		if h.Progress != nil && now.Sub(lastProgress) >= s.progress {
			lastProgress = now
			h.Progress(now.Sub(start), fmt.Sprintf("Waiting for a person to approve %s on %s (%s)", a.ToolName, a.ServerLabel, a.ID))
		}
	}
}

// askClient asks the person in their client (elicitation); their answer
// decides the request unless another came first (then it changes
// nothing).
func (s *Service) askClient(ctx context.Context, u auth.User, a conversation.Approval, h gateway.HoldHooks) {
	msg := fmt.Sprintf("Toolgate: approve %s on %s with arguments %s?", a.ToolName, a.ServerLabel, conversation.Present(a).Arguments)
	ans, ok := h.Ask(ctx, a.ID, msg)
	if !ok || ctx.Err() != nil {
		return
	}
	approve := ans.Approve
	d := conversation.Decision{ApprovalRequestID: a.ID, Approve: &approve}
	if ans.Reason != "" {
		d.Reason = &ans.Reason
	}
	if _, err := s.DecideHeld(auth.WithUser(context.WithoutCancel(ctx), u), d); err != nil {
		s.log.InfoContext(ctx, "mcp agent face: the client's answer did not decide (decided elsewhere first?)", "approval_request_id", a.ID, "error", err)
	}
}

// withdraw closes a pending request whose call will not wait any longer.
func (s *Service) withdraw(ctx context.Context, u auth.User, a conversation.Approval, why string) (gateway.HoldOutcome, error) {
	return s.close(ctx, u, a, conversation.Withdrawn, "Withdrawn: "+why+".")
}

// close sets a still pending request to state (expired, withdrawn) with
// reason, audited, with its decision.recorded; if it was decided meanwhile,
// that decision stands and is returned.
func (s *Service) close(ctx context.Context, u auth.User, a conversation.Approval, state, reason string) (gateway.HoldOutcome, error) {
	var out conversation.Approval
	err := s.store.Tx(ctx, func(r conversation.Repo) error {
		cur, _, err := r.Approvals.Owned(ctx, u.ID, a.ID, true)
		if err != nil {
			return err
		}
		out = cur
		if cur.State != conversation.Pending {
			return nil
		}
		now := s.now()
		out.State, out.DecidedAt, out.DecisionReason = state, &now, &reason
		if err := r.Approvals.Decide(ctx, u.ID, out); err != nil {
			return err
		}
		if err := s.audit(ctx, r, auth.System.Email, "", out, map[string]any{"by": "toolgate"}); err != nil {
			return err
		}
		_, err = r.Events.Append(ctx, out.ConversationID, "", []conversation.NewEvent{event(conversation.EventNameDecision, s.keeper.Decision(out))})
		return err
	})
	if err != nil {
		return gateway.HoldOutcome{}, err
	}
	s.poke(a.ConversationID)
	return outcome(out), nil
}
