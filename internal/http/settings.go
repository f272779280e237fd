package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/policy"
)

func (s *Server) getSettings(c echo.Context) error {
	set, err := s.policies.Settings(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, set)
}

func (s *Server) putSettings(c echo.Context) error {
	var p policy.SettingsPatch
	if err := s.decode(c, &p); err != nil {
		return err
	}
	set, err := s.policies.UpdateSettings(c.Request().Context(), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, set)
}
