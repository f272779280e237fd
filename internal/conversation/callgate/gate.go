// Package callgate is the check at Toolgate's MCP face: whether a call
// may run where it runs, and the record of every call.
package callgate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/record"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/policy"
)

// Gate is the call check behind Toolgate's MCP face: it decides, where
// a call runs, whether it may run, and records every call (refusals
// included) in gateway_calls and the audit log. It works for whoever owns
// the conversation a verified capability token names: the token is the
// authority, no signed-in user is needed.
type Gate struct {
	keeper   *record.Keeper
	store    conversation.Store
	policies conversation.Policies
	// poll is how often Await looks for the result of a running call.
	poll time.Duration
}

var _ gateway.Gate = (*Gate)(nil)

// New returns the gate over the store and policies of keeper, the record
// of what ran.
func New(keeper *record.Keeper) *Gate {
	return &Gate{keeper: keeper, store: keeper.Store(), policies: keeper.Policies(), poll: 50 * time.Millisecond}
}

// The sentences a refusal says; the model and the person act on them.
const (
	msgChanged     = "changed since you allowed it: approve again"
	msgBlocked     = "blocked by the workspace"
	msgTurnedOff   = "blocked: turned off in this conversation"
	msgNotApproved = "not approved: no approval of this turn matches this tool with exactly these arguments; ask the person to approve it"
	msgTurnOver    = "the turn this call belongs to is over; the call did not run"
	msgServer      = "the MCP server is disabled or no longer registered; the call did not run"
	msgUnknownTool = "the MCP server does not list this tool; the call did not run"
)

// scope reads the conversation and the server a token names; a refusal
// when the token's turn is not the running one, or the server is gone or
// disabled. An error: the database could not be asked.
func (g *Gate) scope(ctx context.Context, c gateway.Claims) (conversation.GateScope, *gateway.Refusal, error) {
	sc, err := g.store.Repo().Calls.GateScope(ctx, c.ConversationID, c.ServerLabel)
	switch {
	case apperr.KindOf(err) == apperr.NotFound:
		return sc, &gateway.Refusal{Code: gateway.RefusedTurnOver, Message: msgTurnOver}, nil
	case err != nil:
		return sc, nil, err
	case c.Agent && sc.Conversation.Kind != conversation.KindAgent:
		// A person's client names its own session's conversation only.
		return sc, &gateway.Refusal{Code: gateway.RefusedTurnOver, Message: msgTurnOver}, nil
	case c.Agent:
		// An agent's session has no turns: each call is its own.
	case sc.Conversation.ActiveTurn == "" || sc.Conversation.ActiveTurn != c.TurnID:
		return sc, &gateway.Refusal{Code: gateway.RefusedTurnOver, Message: msgTurnOver}, nil
	case !sc.ServerExists || !sc.ServerEnabled:
		return sc, &gateway.Refusal{Code: gateway.RefusedServer, Message: msgServer}, nil
	}
	return sc, nil, nil
}

// Authorize checks that the token's turn is its conversation's running
// turn and that its server exists and is enabled.
func (g *Gate) Authorize(ctx context.Context, c gateway.Claims) error {
	_, ref, err := g.scope(ctx, c)
	if err != nil {
		return err
	}
	if ref != nil {
		return ref
	}
	return nil
}

// group is the server's tools grouped as a request of the conversation
// would group them now: the owner's policies, the conversation's live
// grants and its choice of tools applied.
func (g *Gate) group(ctx context.Context, sc conversation.GateScope, label string) (policy.ServerTools, error) {
	conv := sc.Conversation
	grants, err := g.keeper.Grants(ctx, g.store.Repo(), conv.OwnerID, conv.ID)
	if err != nil {
		return policy.ServerTools{}, err
	}
	keep := map[string]bool{label: true}
	groups, skipped, err := g.policies.Tools.Request(ctx, conv.OwnerID, grants, keep)
	if err != nil {
		return policy.ServerTools{}, err
	}
	for _, sk := range skipped {
		groups = append(groups, sk.Tools)
	}
	for _, grp := range conv.Tools.Apply(groups, keep) {
		if grp.Server.Label == label {
			return grp, nil
		}
	}
	return policy.ServerTools{Server: policy.Server{Label: label}}, nil
}

// selected reports whether the conversation's choice of tools offers tool.
func selected(sel policy.Selection, label, tool string) bool {
	s, ok := sel.Servers[label]
	return !ok || (s.Enabled && (s.Tools == nil || slices.Contains(s.Tools, tool)))
}

// Listed records what the real server lists (a changed definition asks from
// the next request on) and returns the tools the conversation's owner may
// see: blocked ones are left out. Tools turned off in the conversation are
// listed: each request's allowed_tools leaves them out, Admit refuses them,
// and the provider keeps a listing in its context for the conversation's
// later requests, in which the person may turn them on again.
func (g *Gate) Listed(ctx context.Context, c gateway.Claims, tools []policy.DiscoveredTool) ([]policy.DiscoveredTool, error) {
	sc, ref, err := g.scope(ctx, c)
	if err != nil {
		return nil, err
	}
	if ref != nil {
		return nil, ref
	}
	if _, err := g.policies.Tools.RecordDefinitions(ctx, c.ServerLabel, tools); err != nil {
		return nil, err
	}
	grp, err := g.group(ctx, sc, c.ServerLabel)
	if err != nil {
		return nil, err
	}
	out := make([]policy.DiscoveredTool, 0, len(tools))
	for _, t := range tools {
		if p, _ := grp.Lookup(t.Name); p == policy.Blocked {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// Admit decides on one call, in this order: the token still holds; the
// tool's definition, as the server lists it now, is the one Toolgate holds
// (else it is recorded, so that it asks from the next request on, and the
// call refused); an identical call of the turn already admitted is not run
// again (its stored result, or Pending); then the effective policy of the
// conversation's owner with its grants: blocked refuses, never runs, and
// always runs only on an approved request of this turn for the same tool
// and arguments digest, given for this definition, that no call used.
// Using the approval and writing the receipt (running) commit together.
func (g *Gate) Admit(ctx context.Context, call gateway.Call) (gateway.Verdict, error) {
	c := call.Claims
	rec := conversation.GatewayCall{ID: conversation.NewID("gwc_"), Via: conversation.ViaGateway, ConversationID: c.ConversationID, TurnID: c.TurnID,
		ServerLabel: c.ServerLabel, ToolName: call.ToolName}
	if c.Client != nil {
		rec.Client = &conversation.ClientInfo{Name: c.Client.Name, Title: c.Client.Title, Version: c.Client.Version}
	}
	canonical, sha, err := gateway.ArgumentsDigest(call.Arguments)
	if err != nil {
		rec.StoredArguments, rec.ArgumentsSHA256 = string(mustRedacted(string(call.Arguments))), record.Digest(call.Arguments)
		return g.refuse(ctx, conversation.GateScope{}, rec, &gateway.Refusal{Code: gateway.RefusedNotApproved, Message: "not approved: " + err.Error()})
	}
	rec.StoredArguments, rec.ArgumentsSHA256 = string(mustRedacted(string(canonical))), sha
	if call.Definition != nil {
		rec.DefinitionDigest = call.Definition.Digest()
	}
	sc, ref, err := g.scope(ctx, c)
	if err != nil {
		return gateway.Verdict{}, err
	}
	if ref != nil {
		return g.refuse(ctx, sc, rec, ref)
	}
	if call.Definition == nil {
		return g.refuse(ctx, sc, rec, &gateway.Refusal{Code: gateway.RefusedUnknownTool, Message: msgUnknownTool})
	}
	ref, err = g.heldDefinition(ctx, c.ServerLabel, call.ToolName, *call.Definition, rec.DefinitionDigest)
	if err != nil {
		return gateway.Verdict{}, err
	}
	if ref != nil {
		return g.refuse(ctx, sc, rec, ref)
	}
	grp, err := g.group(ctx, sc, c.ServerLabel)
	if err != nil {
		return gateway.Verdict{}, err
	}
	key := conversation.CallKey{ConversationID: c.ConversationID, TurnID: c.TurnID, ServerLabel: c.ServerLabel, ToolName: call.ToolName,
		ArgumentsSHA256: sha, Agent: c.Agent}
	var (
		v       gateway.Verdict
		refusal *gateway.Refusal
	)
	err = g.store.Tx(ctx, func(r conversation.Repo) error {
		var err error
		v, refusal, err = g.startCall(ctx, r, key, rec, grp, sc)
		return err
	})
	if errors.Is(err, errRaced) {
		// BeginCall's lock makes this unreachable; the unique indexes are
		// the backstop: the call stored first is the one.
		prior, err := g.identical(ctx, key)
		if err != nil || prior == nil {
			return gateway.Verdict{}, fmt.Errorf("a call identical to this one was stored at the same time and cannot be read: %w", err)
		}
		return again(*prior), nil
	}
	if err != nil {
		return gateway.Verdict{}, err
	}
	if refusal != nil {
		if c.Agent && refusal.Code == gateway.RefusedNotApproved {
			// An agent's call that asks is held, not refused: the face
			// holds it for a decision, and its receipt is written as it
			// ends (run on its approval, or refused with why).
			return gateway.Verdict{Refusal: refusal}, nil
		}
		return g.refuse(ctx, sc, rec, refusal)
	}
	return v, nil
}

// heldDefinition checks that the definition of server's tool as the server
// lists it now (def, whose digest is digest) is the one Toolgate holds:
// else it is recorded, so that the tool asks from the next request on, and
// a changed one refuses the call.
func (g *Gate) heldDefinition(ctx context.Context, server, tool string, def policy.DiscoveredTool, digest string) (*gateway.Refusal, error) {
	stored, known, err := g.policies.Tools.Discovered(ctx, server, tool)
	if err != nil {
		return nil, err
	}
	if !known || stored.Digest() != digest {
		// Recorded now: the tool asks (changed, or new) from the next
		// request on.
		if _, err := g.policies.Tools.RecordDefinitions(ctx, server, []policy.DiscoveredTool{def}); err != nil {
			return nil, err
		}
		if known {
			return &gateway.Refusal{Code: gateway.RefusedChanged, Message: msgChanged}, nil
		}
	}
	return nil, nil
}

// startCall is Admit's transaction: it locks the call's key; a turn over
// refuses it and an identical call admitted first answers it; else the
// policy (grp, the conversation's tools in sc) decides and an admitted call
// is stored as running (rec, with what let it run).
func (g *Gate) startCall(ctx context.Context, r conversation.Repo, key conversation.CallKey, rec conversation.GatewayCall, grp policy.ServerTools, sc conversation.GateScope) (gateway.Verdict, *gateway.Refusal, error) {
	active, prior, err := r.Calls.Begin(ctx, key)
	if err != nil {
		return gateway.Verdict{}, nil, err
	}
	if !key.Agent && active != key.TurnID {
		return gateway.Verdict{}, &gateway.Refusal{Code: gateway.RefusedTurnOver, Message: msgTurnOver}, nil
	}
	if prior != nil {
		return again(*prior), nil, nil
	}
	run := rec
	run.State = conversation.CallRunning
	if refusal, err := g.allowCall(ctx, r, key, grp, sc, &run); err != nil || refusal != nil {
		return gateway.Verdict{}, refusal, err
	}
	ok, err := r.Calls.Insert(ctx, run)
	if err != nil {
		return gateway.Verdict{}, nil, err
	}
	if !ok {
		return gateway.Verdict{}, nil, errRaced
	}
	return gateway.Verdict{CallID: run.ID, Run: true, AllowedBy: run.AllowedBy.Kind}, nil, nil
}

// allowCall applies the conversation owner's effective policy (grp) to
// run: blocked or turned off in the conversation (sc) refuses; never runs,
// on this turn's approval for it if there is one; always runs only on a
// usable approval given for the same definition. It sets what let run run.
func (g *Gate) allowCall(ctx context.Context, r conversation.Repo, key conversation.CallKey, grp policy.ServerTools, sc conversation.GateScope, run *conversation.GatewayCall) (*gateway.Refusal, error) {
	switch p, _ := grp.Lookup(run.ToolName); {
	case p == policy.Blocked:
		return &gateway.Refusal{Code: gateway.RefusedBlocked, Message: msgBlocked}, nil
	case !selected(sc.Conversation.Tools, run.ServerLabel, run.ToolName):
		return &gateway.Refusal{Code: gateway.RefusedBlocked, Message: msgTurnedOff}, nil
	case p == policy.Never:
		// A tool that runs unasked may still be the call an approval of
		// this turn was sent for (approved "for this conversation": the
		// grant makes it never, and the follow-up carries the approval):
		// the call is that approval's, so the approval is known to have
		// run.
		a, err := r.Calls.UsableApproval(ctx, key)
		if err != nil {
			return nil, err
		}
		if a != nil && a.DefinitionDigest == run.DefinitionDigest {
			id := a.ID
			run.ApprovalRequestID, run.AllowedBy = &id, g.approvalAllowedBy(*a)
			break
		}
		run.AllowedBy = g.keeper.AllowedBy([]policy.ServerTools{grp}, &conversation.UpstreamItem{ServerLabel: run.ServerLabel, Name: run.ToolName})
	default:
		a, err := r.Calls.UsableApproval(ctx, key)
		if err != nil {
			return nil, err
		}
		if a == nil {
			refusal := &gateway.Refusal{Code: gateway.RefusedNotApproved, Message: msgNotApproved}
			if changedSinceAllowed(grp, run.ToolName) {
				// It would run unasked but for the change (recorded
				// when the face listed it): say so.
				refusal = &gateway.Refusal{Code: gateway.RefusedChanged, Message: msgChanged}
			}
			return refusal, nil
		}
		if a.DefinitionDigest != run.DefinitionDigest {
			return &gateway.Refusal{Code: gateway.RefusedChanged, Message: msgChanged}, nil
		}
		id := a.ID
		run.ApprovalRequestID, run.AllowedBy = &id, g.approvalAllowedBy(*a)
	}
	return nil, nil
}

// changedSinceAllowed reports whether tool asks only because its
// definition changed since it was allowed (or since its read-only hint was
// trusted).
func changedSinceAllowed(grp policy.ServerTools, tool string) bool {
	ab := grp.AsksBecause(tool)
	return ab != nil && (ab.Reason == policy.ReasonChanged || ab.Reason == policy.ReasonReadOnlyChanged)
}

// errRaced: an identical call was stored by another transaction.
var errRaced = errors.New("an identical call was stored first")

// identical reads the identical call of key admitted first, if any.
func (g *Gate) identical(ctx context.Context, key conversation.CallKey) (*conversation.GatewayCall, error) {
	var prior *conversation.GatewayCall
	err := g.store.Tx(ctx, func(r conversation.Repo) error {
		var err error
		_, prior, err = r.Calls.Begin(ctx, key)
		return err
	})
	return prior, err
}

// again is the verdict on a call identical to prior, which was admitted
// first: nothing runs again.
func again(prior conversation.GatewayCall) gateway.Verdict {
	v := gateway.Verdict{CallID: prior.ID}
	if prior.AllowedBy != nil {
		v.AllowedBy = prior.AllowedBy.Kind
	}
	if prior.State == conversation.CallRunning {
		v.Pending = true
		return v
	}
	res := resultOf(prior)
	v.Stored = &res
	return v
}

// resultOf is a finished call's result as stored (secrets hidden).
func resultOf(c conversation.GatewayCall) gateway.Result {
	return gateway.Result{JSON: c.Result, IsError: c.IsError, Failure: c.Failure, NotRun: c.State == conversation.CallNotRun}
}

// approvalAllowedBy says what let a call run on approval a: the person, or
// the rule, hook or policy that answered the request without a card.
func (g *Gate) approvalAllowedBy(a conversation.Approval) *conversation.AllowedBy {
	if a.Rules != nil {
		if by := g.keeper.CheckedBy(a.Rules); by != nil {
			return by
		}
	}
	return &conversation.AllowedBy{Kind: "approval"}
}

// refuse records a refused call (its row and its receipt, together) and
// returns the verdict. sc may be empty (the conversation is gone).
func (g *Gate) refuse(ctx context.Context, sc conversation.GateScope, rec conversation.GatewayCall, ref *gateway.Refusal) (gateway.Verdict, error) {
	rec.State, rec.Refusal = conversation.CallRefused, ref
	err := g.store.Tx(ctx, func(r conversation.Repo) error {
		if _, err := r.Calls.Insert(ctx, rec); err != nil {
			return err
		}
		return g.keeper.AuditCall(ctx, r, sc.Conversation.OwnerID, sc.OwnerEmail, rec)
	})
	if err != nil {
		return gateway.Verdict{}, err
	}
	return gateway.Verdict{CallID: rec.ID, Refusal: ref}, nil
}
