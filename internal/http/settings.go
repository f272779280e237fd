package http

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
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

func (s *Server) listAudit(c echo.Context) error {
	// server_label; server_id is its deprecated alias (README: "Deprecated fields").
	server := c.QueryParam("server_label")
	if server == "" {
		server = c.QueryParam("server_id")
	}
	q := policy.AuditQuery{ServerLabel: server, Action: c.QueryParam("action")}
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return apperr.Invalidf("invalid_limit", "limit", "limit must be a whole number between 1 and 500 (got %q)", v)
		}
		q.Limit = n
	}
	if v := c.QueryParam("cursor"); v != "" {
		id, err := policy.DecodeCursor(v)
		if err != nil {
			return err
		}
		q.BeforeID = id
	}
	page, err := s.policies.Audit(c.Request().Context(), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}
