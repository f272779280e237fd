package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/rules"
)

type tryRulesRequest struct {
	Rules []rules.Rule `json:"rules"`
	// Limit is how many of the tool's most recent requests to evaluate
	// (default 10, at most 100).
	Limit int `json:"limit"`
}

// tryRules evaluates candidate (unsaved) rules, as the tool's own list,
// over the tool's most recent approval requests the caller may see: their
// own conversations', every conversation's for an admin.
func (s *Server) tryRules(c echo.Context) error {
	var req tryRulesRequest
	if err := s.decode(c, &req); err != nil {
		return err
	}
	if req.Rules == nil {
		return apperr.Invalidf("invalid_rule", "rules", `rules is required: a list of {"when", "decision", "reason"}`)
	}
	name, err := toolNameAt(c, 3)
	if err != nil {
		return err
	}
	ctx, label := c.Request().Context(), c.Param("serverId")
	set, err := s.policies.Rules.CompileToolRules(ctx, label, name, req.Rules)
	if err != nil {
		return err
	}
	out, err := s.chat.Book().TryRules(ctx, set, label, name, req.Limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
