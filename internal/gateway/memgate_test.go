package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/policy"
)

// memGate is an in-memory Gate for the face's tests (the real one is
// internal/conversation's, over Postgres). A tool runs when it is allowed
// by name and its definition is the one it was allowed for; identical calls
// of a turn run once.
type memGate struct {
	mu      sync.Mutex
	active  map[string]string // conversation -> running turn
	allowed map[string]string // tool -> definition digest it was allowed for
	hidden  map[string]bool   // tools left out of listings
	down    bool              // Admit and Listed fail like a database that is down
	admits  []gateway.Call
	calls   map[string]*memCall // by turn|server|tool|sha
	byID    map[string]*memCall
	n       int
}

type memCall struct {
	id     string
	done   chan struct{}
	result gateway.Result
}

func newMemGate() *memGate {
	return &memGate{active: map[string]string{}, allowed: map[string]string{}, hidden: map[string]bool{},
		calls: map[string]*memCall{}, byID: map[string]*memCall{}}
}

func (g *memGate) startTurn(conversation, turn string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active[conversation] = turn
}

func (g *memGate) allow(tool policy.DiscoveredTool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.allowed[tool.Name] = tool.Digest()
}

func (g *memGate) Authorize(_ context.Context, c gateway.Claims) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active[c.ConversationID] != c.TurnID {
		return &gateway.Refusal{Code: gateway.RefusedTurnOver, Message: "this turn is over: the token was for a turn that no longer runs"}
	}
	return nil
}

func (g *memGate) Listed(_ context.Context, _ gateway.Claims, tools []policy.DiscoveredTool) ([]policy.DiscoveredTool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down {
		return nil, errors.New("database down")
	}
	var out []policy.DiscoveredTool
	for _, t := range tools {
		if !g.hidden[t.Name] {
			out = append(out, t)
		}
	}
	return out, nil
}

func (g *memGate) Admit(_ context.Context, c gateway.Call) (gateway.Verdict, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down {
		return gateway.Verdict{}, errors.New("database down")
	}
	g.admits = append(g.admits, c)
	g.n++
	id := fmt.Sprintf("call-%d", g.n)
	switch digest, ok := g.allowed[c.ToolName]; {
	case c.Definition == nil:
		return gateway.Verdict{CallID: id, Refusal: &gateway.Refusal{Code: gateway.RefusedUnknownTool, Message: "The server does not offer " + c.ToolName + "."}}, nil
	case !ok:
		return gateway.Verdict{CallID: id, Refusal: &gateway.Refusal{Code: gateway.RefusedNotApproved, Message: c.ToolName + " was not approved: approve it in Toolgate, then ask again."}}, nil
	case digest != c.Definition.Digest():
		return gateway.Verdict{CallID: id, Refusal: &gateway.Refusal{Code: gateway.RefusedChanged, Message: c.ToolName + " changed since you allowed it: approve again."}}, nil
	}
	key := c.Claims.TurnID + "|" + c.Claims.ServerLabel + "|" + c.ToolName + "|" + c.ArgumentsSHA256
	if prev, ok := g.calls[key]; ok {
		select {
		case <-prev.done:
			r := prev.result
			return gateway.Verdict{CallID: prev.id, Stored: &r}, nil
		default:
			return gateway.Verdict{CallID: prev.id, Pending: true}, nil
		}
	}
	mc := &memCall{id: id, done: make(chan struct{})}
	g.calls[key], g.byID[id] = mc, mc
	return gateway.Verdict{CallID: id, Run: true, AllowedBy: "policy"}, nil
}

func (g *memGate) Finish(_ context.Context, callID string, r gateway.Result) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	mc, ok := g.byID[callID]
	if !ok {
		return fmt.Errorf("no call %s", callID)
	}
	mc.result = r
	close(mc.done)
	return nil
}

func (g *memGate) Await(ctx context.Context, callID string) (gateway.Result, error) {
	g.mu.Lock()
	mc, ok := g.byID[callID]
	g.mu.Unlock()
	if !ok {
		return gateway.Result{}, fmt.Errorf("no call %s", callID)
	}
	select {
	case <-mc.done:
		return mc.result, nil
	case <-ctx.Done():
		return gateway.Result{}, ctx.Err()
	}
}

// finished returns the results Finish stored, by call id.
func (g *memGate) finished() map[string]gateway.Result {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]gateway.Result{}
	for id, mc := range g.byID {
		select {
		case <-mc.done:
			out[id] = mc.result
		default:
		}
	}
	return out
}

func (g *memGate) admitted() []gateway.Call {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]gateway.Call(nil), g.admits...)
}
