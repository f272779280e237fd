package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/rules"
)

type rulesBody struct {
	Rules []rules.Rule `json:"rules"`
}

// ruleList is the list of rules a route addresses: the tool's, the
// server's or (neither parameter) the workspace's.
func ruleList(c echo.Context) (policy.RuleList, error) {
	l := policy.RuleList{ServerLabel: c.Param("serverId")}
	if c.Param("toolName") != "" {
		name, err := toolName(c)
		if err != nil {
			return l, err
		}
		l.ToolName = name
	}
	return l, nil
}

func (s *Server) getRules(c echo.Context) error {
	l, err := ruleList(c)
	if err != nil {
		return err
	}
	rs, err := s.policies.Rules.Rules(c.Request().Context(), l)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rulesBody{Rules: rs})
}

func (s *Server) putRules(c echo.Context) error {
	var req rulesBody
	if err := s.decode(c, &req); err != nil {
		return err
	}
	if req.Rules == nil {
		return apperr.Invalidf("invalid_rule", "rules",
			`rules is required: a list of {"when", "decision", "reason"}, e.g. {"rules": [{"when": "args.city in [\"Test\"]", "decision": "approve"}]}; [] removes them`)
	}
	l, err := ruleList(c)
	if err != nil {
		return err
	}
	rs, err := s.policies.Rules.SetRules(c.Request().Context(), l, req.Rules)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rulesBody{Rules: rs})
}

type testRulesRequest struct {
	Rules  []rules.Rule   `json:"rules"`
	Tool   string         `json:"tool"`
	Server string         `json:"server"`
	Args   map[string]any `json:"args"`
}

type testRulesResponse struct {
	Decision  rules.Decision `json:"decision"`
	RuleIndex *int           `json:"rule_index"`
	// Error says why the rule at RuleIndex could not be evaluated (so asks).
	Error *string `json:"error"`
}

func (s *Server) testRules(c echo.Context) error {
	var req testRulesRequest
	if err := s.decode(c, &req); err != nil {
		return err
	}
	if req.Rules == nil {
		return apperr.Invalidf("invalid_rule", "rules", `rules is required: a list of {"when", "decision", "reason"}`)
	}
	res, err := s.policies.Rules.TryRules(c.Request().Context(), policy.RuleTrial{
		Rules: req.Rules, Tool: req.Tool, Server: req.Server, Args: req.Args})
	if err != nil {
		return err
	}
	out := testRulesResponse{Decision: res.Decision}
	if res.Matched() {
		out.RuleIndex = &res.Index
	}
	if res.Err != nil {
		msg := res.Err.Error()
		out.Error = &msg
	}
	return c.JSON(http.StatusOK, out)
}
