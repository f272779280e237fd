package http

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/policy"
)

// statsPeriod reads from and to (RFC 3339, both optional): to defaults to
// now, from to DefaultStatsPeriod before to.
func statsPeriod(c echo.Context, now time.Time) (policy.StatsPeriod, error) {
	p := policy.StatsPeriod{To: now}
	for _, f := range []struct {
		name string
		into *time.Time
	}{{"to", &p.To}, {"from", &p.From}} {
		v := c.QueryParam(f.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return p, apperr.Invalidf("invalid_period", f.name,
				"%s must be an RFC 3339 time such as 2025-06-01T00:00:00Z (got %q)", f.name, v)
		}
		*f.into = t
	}
	if p.From.IsZero() {
		p.From = p.To.Add(-policy.DefaultStatsPeriod)
	}
	return p, p.Validate()
}

// approvalStats answers GET /api/approvals/stats: per tool, what the audit
// log says about its calls and approval requests in the period.
func (s *Server) approvalStats(c echo.Context) error {
	p, err := statsPeriod(c, time.Now().UTC())
	if err != nil {
		return err
	}
	stats, err := s.policies.Audit.ApprovalStats(c.Request().Context(), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, stats)
}
