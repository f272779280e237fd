package decide

import (
	"context"
	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/rules"
	"slices"
)

// Rules returns a list of argument rules (empty when none are set). Every
// signed-in user may read them: they say what will be asked.
func (s *Rules) Rules(ctx context.Context, l policy.RuleList) ([]rules.Rule, error) {
	if _, err := policy.Caller(ctx); err != nil {
		return nil, err
	}
	var out []rules.Rule
	err := s.store.Tx(ctx, func(r policy.Repo) error {
		if err := checkRuleList(ctx, r, l, false); err != nil {
			return err
		}
		var err error
		out, err = r.Rules.Get(ctx, l)
		return err
	})
	return out, err
}

// SetRules replaces a list of argument rules, admins only, audited. The
// rules are compiled first (a tool's against its input schema, when it has
// one): an invalid rule is refused with its index and CEL's position.
func (s *Rules) SetRules(ctx context.Context, l policy.RuleList, rs []rules.Rule) ([]rules.Rule, error) {
	u, err := policy.RequireAdmin(ctx, "argument rules")
	if err != nil {
		return nil, err
	}
	if rs == nil {
		rs = []rules.Rule{}
	}
	if l.ToolName != "" {
		if err := policy.ValidateToolName("tool_name", l.ToolName); err != nil {
			return nil, err
		}
	}
	err = s.store.Tx(ctx, func(r policy.Repo) error {
		if err := checkRuleList(ctx, r, l, true); err != nil {
			return err
		}
		var schema []byte
		if l.ToolName != "" {
			tools, err := r.Tools.List(ctx, l.ServerLabel)
			if err != nil {
				return err
			}
			schema = policy.FindTool(tools, l.ServerLabel, l.ToolName).InputSchema
		}
		if err := rules.Check(rs, schema); err != nil {
			return err
		}
		old, err := r.Rules.Get(ctx, l)
		if err != nil {
			return err
		}
		if err := r.Rules.Put(ctx, l, rs, u.Email); err != nil {
			return err
		}
		var server, tool *string
		if l.ServerLabel != "" {
			server = &l.ServerLabel
		}
		if l.ToolName != "" {
			tool = &l.ToolName
		}
		return policy.WriteAudit(ctx, r, u, policy.ActionRulesSet, server, tool,
			map[string]any{"scope": l.Scope(), "rules": old}, map[string]any{"scope": l.Scope(), "rules": rs})
	})
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// checkRuleList checks that l's server exists (held for update with lock,
// so concurrent changes of its lists queue).
func checkRuleList(ctx context.Context, r policy.Repo, l policy.RuleList, lock bool) error {
	if l.ServerLabel == "" {
		if l.ToolName != "" {
			return apperr.New(apperr.Internal, "rule_list", "a tool's rule list without its server")
		}
		return nil
	}
	_, err := r.Servers.Get(ctx, l.ServerLabel, lock)
	return err
}

// TryRules compiles t's rules and evaluates them over t's call made by the
// caller. Nothing is stored.
func (s *Rules) TryRules(ctx context.Context, t policy.RuleTrial) (rules.Result, error) {
	u, err := policy.Caller(ctx)
	if err != nil {
		return rules.Result{}, err
	}
	set, err := rules.Compile(t.Rules, nil)
	if err != nil {
		return rules.Result{}, err
	}
	return set.Eval(rules.Call{Args: t.Args, Tool: t.Tool, Server: t.Server,
		User: rules.User{ID: u.ID, Email: u.Email, Role: string(u.Role)}}), nil
}

// CompileToolRules compiles candidate rules for a tool as saving them would
// (against its input schema): the same 400 with the rule and position. The
// server must exist and know the tool (discovered, or with a policy);
// anything else is 404.
func (s *Rules) CompileToolRules(ctx context.Context, label, tool string, rs []rules.Rule) (*rules.Set, error) {
	if _, err := policy.Caller(ctx); err != nil {
		return nil, err
	}
	if err := policy.ValidateToolName("tool_name", tool); err != nil {
		return nil, err
	}
	var schema []byte
	err := s.store.Tx(ctx, func(r policy.Repo) error {
		if _, err := r.Servers.Get(ctx, label, false); err != nil {
			return err
		}
		tools, err := r.Tools.List(ctx, label)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(tools, func(t policy.Tool) bool { return t.Name == tool })
		if i < 0 {
			return apperr.NotFoundf("tool_not_found", "the server %q has no tool %q; GET /api/mcp/servers/%s/tools lists them", label, tool, label)
		}
		schema = tools[i].InputSchema
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rules.Compile(rs, schema)
}
