package policy

import (
	"context"
	"slices"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/rules"
)

// ActionRulesSet is the audit action of a changed list of argument rules.
const ActionRulesSet = "rules.set"

// RuleList names one list of argument rules: the workspace's (no server),
// a server's (no tool) or a tool's.
type RuleList struct {
	ServerLabel string
	ToolName    string
}

// Scope is which kind of list l is.
func (l RuleList) Scope() rules.Scope {
	switch {
	case l.ServerLabel == "":
		return rules.ScopeWorkspace
	case l.ToolName == "":
		return rules.ScopeServer
	}
	return rules.ScopeTool
}

// Rules returns a list of argument rules (empty when none are set). Every
// signed-in user may read them: they say what will be asked.
func (s *Service) Rules(ctx context.Context, l RuleList) ([]rules.Rule, error) {
	if _, err := caller(ctx); err != nil {
		return nil, err
	}
	var out []rules.Rule
	err := s.store.Tx(ctx, func(r Repo) error {
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
func (s *Service) SetRules(ctx context.Context, l RuleList, rs []rules.Rule) ([]rules.Rule, error) {
	u, err := requireAdmin(ctx, "argument rules")
	if err != nil {
		return nil, err
	}
	if rs == nil {
		rs = []rules.Rule{}
	}
	if l.ToolName != "" {
		if err := ValidateToolName("tool_name", l.ToolName); err != nil {
			return nil, err
		}
	}
	err = s.store.Tx(ctx, func(r Repo) error {
		if err := checkRuleList(ctx, r, l, true); err != nil {
			return err
		}
		var schema []byte
		if l.ToolName != "" {
			tools, err := r.Tools.List(ctx, l.ServerLabel)
			if err != nil {
				return err
			}
			schema = findTool(tools, l.ServerLabel, l.ToolName).InputSchema
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
		return s.insertAudit(ctx, r, u, ActionRulesSet, server, tool,
			map[string]any{"scope": l.Scope(), "rules": old}, map[string]any{"scope": l.Scope(), "rules": rs})
	})
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// checkRuleList checks that l's server exists (held for update with lock,
// so concurrent changes of its lists queue).
func checkRuleList(ctx context.Context, r Repo, l RuleList, lock bool) error {
	if l.ServerLabel == "" {
		if l.ToolName != "" {
			return apperr.New(apperr.Internal, "rule_list", "a tool's rule list without its server")
		}
		return nil
	}
	_, err := r.Servers.Get(ctx, l.ServerLabel, lock)
	return err
}

// RuleTrial is what POST /api/rules/test evaluates: rules over a sample call
// made by the caller.
type RuleTrial struct {
	Rules  []rules.Rule
	Tool   string
	Server string
	Args   map[string]any
}

// TryRules compiles t's rules and evaluates them over t's call made by the
// caller. Nothing is stored.
func (s *Service) TryRules(ctx context.Context, t RuleTrial) (rules.Result, error) {
	u, err := caller(ctx)
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
func (s *Service) CompileToolRules(ctx context.Context, label, tool string, rs []rules.Rule) (*rules.Set, error) {
	if _, err := caller(ctx); err != nil {
		return nil, err
	}
	if err := ValidateToolName("tool_name", tool); err != nil {
		return nil, err
	}
	var schema []byte
	err := s.store.Tx(ctx, func(r Repo) error {
		if _, err := r.Servers.Get(ctx, label, false); err != nil {
			return err
		}
		tools, err := r.Tools.List(ctx, label)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name == tool })
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
