package http

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/hooks"
	"github.com/toolgate/toolgate/internal/policy"
)

// decisionHookView is a decision hook as the API shows it. Secret is only
// set in the answer to the PUT that generated it: it is never shown again.
type decisionHookView struct {
	Scope     string    `json:"scope"`     // "server" or "workspace"
	ServerID  *string   `json:"server_id"` // null for the workspace's
	URL       string    `json:"url"`
	TimeoutMS int       `json:"timeout_ms"`
	Enabled   bool      `json:"enabled"`
	Secret    *string   `json:"secret,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
	UpdatedBy string    `json:"updated_by"`
}

func newDecisionHookView(h policy.DecisionHook, secret string) decisionHookView {
	v := decisionHookView{Scope: hooks.HookWorkspace, URL: h.URL, TimeoutMS: h.TimeoutMS, Enabled: h.Enabled,
		UpdatedAt: h.UpdatedAt, UpdatedBy: h.UpdatedBy}
	if h.ServerLabel != "" {
		label := h.ServerLabel
		v.Scope, v.ServerID = hooks.HookServer, &label
	}
	if secret != "" {
		v.Secret = &secret
	}
	return v
}

type putDecisionHookRequest struct {
	URL          string `json:"url"`
	TimeoutMS    *int   `json:"timeout_ms"`
	Enabled      *bool  `json:"enabled"`
	RotateSecret bool   `json:"rotate_secret"`
}

// Every decision-hook route is admin-only (routes.go); the server's routes
// address it by serverId, the workspace's have none.

func (s *Server) getDecisionHook(c echo.Context) error {
	h, err := s.policies.Hooks.DecisionHook(c.Request().Context(), c.Param("serverId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newDecisionHookView(h, ""))
}

func (s *Server) putDecisionHook(c echo.Context) error {
	var req putDecisionHookRequest
	if err := s.decode(c, &req); err != nil {
		return err
	}
	h, secret, err := s.policies.Hooks.SetDecisionHook(c.Request().Context(), c.Param("serverId"), policy.DecisionHookInput{
		URL: req.URL, TimeoutMS: req.TimeoutMS, Enabled: req.Enabled, RotateSecret: req.RotateSecret})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newDecisionHookView(h, secret))
}

func (s *Server) deleteDecisionHook(c echo.Context) error {
	if err := s.policies.Hooks.DeleteDecisionHook(c.Request().Context(), c.Param("serverId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// testDecisionHook sends the hook a sample request: its answer is the
// response (200 whatever the hook did; error says why it counts as ask).
func (s *Server) testDecisionHook(c echo.Context) error {
	a, err := s.policies.Hooks.TestDecisionHook(c.Request().Context(), c.Param("serverId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a)
}
