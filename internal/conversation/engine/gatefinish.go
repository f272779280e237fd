package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/policy"
)

// Finish stores how an admitted call ended, with its receipt: done (the
// server answered), failed (no answer came back: it may have run) or
// not_run (it provably never reached the server). The result is stored
// with its secrets hidden, with the digest of the result as it came.
func (g *CallGate) Finish(ctx context.Context, callID string, res gateway.Result) error {
	c := conversation.GatewayCall{ID: callID, State: conversation.CallDone, IsError: res.IsError, Failure: res.Failure, Masked: res.Masked}
	switch {
	case res.NotRun:
		c.State = conversation.CallNotRun
	case res.Failure != "":
		c.State = conversation.CallFailed
	}
	if len(res.JSON) > 0 {
		shown, _ := conversation.Redact(string(res.JSON))
		d := digest(res.JSON)
		c.Result, c.OutputSHA256 = shown, &d
	}
	return g.s.store.Tx(ctx, func(r conversation.Repo) error {
		done, ok, err := r.FinishGatewayCall(ctx, c)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.New(apperr.Conflict, "call_not_running", "call %q is not running: it is unknown or its result is stored already", callID)
		}
		return g.s.auditCall(ctx, r, done.OwnerID, done.OwnerEmail, done)
	})
}

// Await waits for the result of a call another request is running, until
// ctx ends.
func (g *CallGate) Await(ctx context.Context, callID string) (gateway.Result, error) {
	wait := g.poll
	for {
		c, err := g.s.store.Repo().GatewayCall(ctx, callID)
		if err != nil {
			return gateway.Result{}, err
		}
		if c.State != conversation.CallRunning {
			return resultOf(c), nil
		}
		select {
		case <-ctx.Done():
			return gateway.Result{}, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}

// auditCall writes the receipt of a call through the face (a tool.call
// audit entry, named by the call's id) in r's transaction: refused, or
// finished. owner and email name the conversation's owner ("" when gone).
func (s *Service) auditCall(ctx context.Context, r conversation.Repo, owner, email string, c conversation.GatewayCall) error {
	rc := gatewayReceipt(c)
	if c.ApprovalRequestID != nil && owner != "" {
		aps, err := r.Approvals(ctx, owner, c.ConversationID, []string{*c.ApprovalRequestID}, false)
		if err != nil {
			return err
		}
		if len(aps) == 1 {
			rc.DecidedBy, rc.DecidedByID = aps[0].DecidedBy, aps[0].DecidedByID
		}
	}
	after, err := json.Marshal(rc)
	if err != nil {
		return err
	}
	actor, actorID := email, owner
	if actor == "" {
		actor, actorID = auth.System.Email, ""
	}
	return s.policies.Audit(ctx, r, policy.AuditEntry{Actor: actor, ActorID: actorID, Action: policy.ActionToolCall,
		ServerLabel: &c.ServerLabel, ToolName: &c.ToolName, Before: json.RawMessage("null"), After: after,
		CallID: c.ID, ConversationID: c.ConversationID})
}
