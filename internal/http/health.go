package http

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
)

type statusResponse struct {
	Status string `json:"status"`
}

// healthz says the process is up; it touches nothing else.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, statusResponse{"ok"})
}

// readyz says whether requests can be served: the database must answer.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.db.Ping(ctx); err != nil {
		s.log.WarnContext(ctx, "readiness check failed", "error", err)
		return apperr.DatabaseUnavailable(err)
	}
	return c.JSON(http.StatusOK, statusResponse{"ready"})
}
