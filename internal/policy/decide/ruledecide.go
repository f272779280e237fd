package decide

import (
	"context"
	"encoding/json"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/rules"
	"sync"
)

// HasRules reports whether any list applies to a tool: such a tool is
// offered as asking, so that every call comes to Toolgate.
func HasRules(ctx context.Context, r policy.Repo, label, tool string) (bool, error) {
	for _, l := range ruleLists(label, tool) {
		rs, err := r.Rules.Get(ctx, l)
		if err != nil {
			return false, err
		}
		if len(rs) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// DecideByRules evaluates the tool's rules, then the server's, then the
// workspace's over one call made for u, in r: the first rule that holds
// decides, and a rule that fails to evaluate asks. Rules never loosen an
// admin's decision: for a blocked tool the result is deny, and for a
// locked always an approving rule asks instead (a denying one still denies).
func DecideByRules(ctx context.Context, r policy.Repo, u auth.User, label, tool string, args map[string]any) (policy.RuleDecision, error) {
	call := rules.Call{Args: args, Tool: tool, Server: label, User: rules.User{ID: u.ID, Email: u.Email, Role: string(u.Role)}}
	out := policy.RuleDecision{Decision: rules.Ask, Index: -1}
	for _, l := range ruleLists(label, tool) {
		rs, err := r.Rules.Get(ctx, l)
		if err != nil {
			return out, err
		}
		out.Checked += len(rs)
		if out.Scope != "" || len(rs) == 0 {
			continue
		}
		// Stored rules compiled when they were saved; one that no longer
		// compiles (the tool's schema changed) asks.
		set, err := compiled(rs)
		if err != nil {
			// The error names the rule; Index and When say which, Error what failed.
			problem, i := rules.Problem(err)
			i = max(i, 0)
			out.Scope, out.Index, out.Error = l.Scope(), i, problem
			if i < len(rs) {
				out.When, out.Reason = rs[i].When, rs[i].Reason
			}
			continue
		}
		res := set.Eval(call)
		if !res.Matched() {
			continue
		}
		out.Decision, out.Scope, out.Index, out.When, out.Reason = res.Decision, l.Scope(), res.Index, res.Rule.When, res.Rule.Reason
		if res.Err != nil {
			out.Error = res.Err.Error()
		}
	}
	if out.Decision != rules.Approve {
		return out, nil
	}
	res, err := policy.ResolveTool(ctx, r, u.ID, label, tool)
	if err != nil {
		return out, err
	}
	set, err := r.Settings.Get(ctx)
	if err != nil {
		return out, err
	}
	switch {
	case res.Policy == policy.Blocked:
		out.Decision, out.Clamped = rules.Deny, true
	case res.AskLock != "", set.AskEverything:
		// The admin's lock, or the switch that makes every tool ask while on.
		out.Decision, out.Clamped = rules.Ask, true
	}
	return out, nil
}

// ruleLists are the lists that apply to a tool, in the order they are checked.
func ruleLists(label, tool string) []policy.RuleList {
	return []policy.RuleList{{ServerLabel: label, ToolName: tool}, {ServerLabel: label}, {}}
}

// compiledCache holds rule lists compiled for evaluation, keyed by their
// JSON: a list that changes is a new key, so nothing is ever stale. It is
// emptied when it grows past compiledCacheMax (old lists are not reused).
var compiledCache = struct {
	sync.Mutex
	sets map[string]*rules.Set
}{sets: map[string]*rules.Set{}}

const compiledCacheMax = 1024

// compiled is rs compiled (cached): compiling costs far more than
// evaluating, and every approval request of a ruled tool evaluates.
func compiled(rs []rules.Rule) (*rules.Set, error) {
	b, err := json.Marshal(rs)
	if err != nil {
		return nil, err
	}
	key := string(b)
	compiledCache.Lock()
	set, ok := compiledCache.sets[key]
	compiledCache.Unlock()
	if ok {
		return set, nil
	}
	set, err = rules.Compile(rs, nil)
	if err != nil {
		return nil, err
	}
	compiledCache.Lock()
	if len(compiledCache.sets) >= compiledCacheMax {
		clear(compiledCache.sets)
	}
	compiledCache.sets[key] = set
	compiledCache.Unlock()
	return set, nil
}
