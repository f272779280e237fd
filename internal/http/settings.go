package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/policy"
)

func (s *Server) getSettings(c echo.Context) error {
	set, err := s.policies.Policies.Settings(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, set)
}

// putSettingsRequest is a settings patch, or {"reset": true} alone.
type putSettingsRequest struct {
	policy.SettingsPatch
	Reset *bool `json:"reset"`
}

func (s *Server) putSettings(c echo.Context) error {
	var req putSettingsRequest
	if err := s.decode(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if req.Reset != nil {
		p := req.SettingsPatch
		if p.DefaultPolicy != nil || p.DefaultPolicyLocked != nil || p.AskEverything != nil {
			return apperr.Invalidf("invalid_reset", "reset",
				"reset puts every setting back to the install's defaults, so it cannot come with other fields; send {\"reset\": true} alone, or the fields without reset")
		}
		if !*req.Reset {
			return apperr.Invalidf("invalid_reset", "reset",
				"reset can only be true (send {\"reset\": true} to put the settings back to the install's defaults)")
		}
		set, err := s.policies.Policies.ResetSettings(ctx)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, set)
	}
	set, err := s.policies.Policies.UpdateSettings(ctx, req.SettingsPatch)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, set)
}
