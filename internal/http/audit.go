package http

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/policy"
)

// auditExportPage is how many entries the export reads at a time (a
// variable so a test can make pages small).
var auditExportPage = 500

// auditFilters reads the filters GET /api/audit and its export share.
// action is one action or several, comma-separated (the web app's groups:
// "policy.set,policy.delete").
func auditFilters(c echo.Context) policy.AuditQuery {
	// server_label; server_id is its deprecated alias (docs/api.md: "Deprecated fields").
	server := c.QueryParam("server_label")
	if server == "" {
		server = c.QueryParam("server_id")
	}
	var actions []string
	for a := range strings.SplitSeq(c.QueryParam("action"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			actions = append(actions, a)
		}
	}
	return policy.AuditQuery{ServerLabel: server, Actions: actions}
}

func (s *Server) listAudit(c echo.Context) error {
	q := auditFilters(c)
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
	page, err := s.policies.Audit.Audit(c.Request().Context(), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

// exportAudit streams the (filtered) audit log as JSON lines, newest first,
// one entry a line, page by page: what the caller may read in
// GET /api/audit, all of it.
func (s *Server) exportAudit(c echo.Context) error {
	if f := c.QueryParam("format"); f != "" && f != "jsonl" {
		return apperr.Invalidf("invalid_format", "format", "format must be jsonl (got %q)", f)
	}
	ctx := c.Request().Context()
	q := auditFilters(c)
	q.Limit = auditExportPage
	// The first page is read before the header goes out, so a failure is
	// still an error answer.
	page, err := s.policies.Audit.Audit(ctx, q)
	if err != nil {
		return err
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="toolgate-audit.jsonl"`)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	for {
		for _, e := range page.Entries {
			if err := enc.Encode(e); err != nil {
				return nil // the client went away
			}
		}
		w.Flush()
		if page.NextCursor == nil {
			return nil
		}
		if q.BeforeID, err = policy.DecodeCursor(*page.NextCursor); err == nil {
			page, err = s.policies.Audit.Audit(ctx, q)
		}
		if err != nil {
			// The answer has begun: it can only be cut short, which a
			// reader sees as a missing last line.
			s.log.ErrorContext(ctx, "exporting the audit log failed", "error", err)
			return nil
		}
	}
}
