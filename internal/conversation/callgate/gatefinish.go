package callgate

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/record"
	"github.com/toolgate/toolgate/internal/gateway"
)

// Finish stores how an admitted call ended, with its receipt: done (the
// server answered), failed (no answer came back: it may have run) or
// not_run (it provably never reached the server). The result is stored
// with its secrets hidden, with the digest of the result as it came.
func (g *Gate) Finish(ctx context.Context, callID string, res gateway.Result) error {
	c := conversation.GatewayCall{ID: callID, State: conversation.CallDone, IsError: res.IsError, Failure: res.Failure, Masked: res.Masked}
	switch {
	case res.NotRun:
		c.State = conversation.CallNotRun
	case res.Failure != "":
		c.State = conversation.CallFailed
	}
	if len(res.JSON) > 0 {
		shown, _ := conversation.Redact(string(res.JSON))
		d := record.Digest(res.JSON)
		c.Result, c.OutputSHA256 = shown, &d
	}
	return g.store.Tx(ctx, func(r conversation.Repo) error {
		done, ok, err := r.Calls.Finish(ctx, c)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.New(apperr.Conflict, "call_not_running", "call %q is not running: it is unknown or its result is stored already", callID)
		}
		return g.keeper.AuditCall(ctx, r, done.OwnerID, done.OwnerEmail, done)
	})
}

// Await waits for the result of a call another request is running, until
// ctx ends.
func (g *Gate) Await(ctx context.Context, callID string) (gateway.Result, error) {
	wait := g.poll
	for {
		c, err := g.store.Repo().Calls.Get(ctx, callID)
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
