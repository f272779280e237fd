package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/policy"
)

// serverStore is policy.ServerStore.
type serverStore struct{ q querier }

const serverCols = `s.label, s.url, s.description, s.headers_enc, s.default_policy, s.enabled, s.created_at,
	s.updated_at, s.tools_refreshed_at, coalesce(s.tools_refresh_error, ''),
	(SELECT count(*) FROM mcp_tools t WHERE t.server_label = s.label), s.default_policy_locked, s.first_discovered_at,
	s.health_status, s.health_since, coalesce(s.health_error, ''), s.health_checked_at, s.health_ok_at, s.approval_ttl_seconds,
	s.read_only_hints, s.health_list_ms, s.health_failures, s.url_enc, NOT s.mask_results`

func scanServer(row pgx.Row) (policy.Server, error) {
	var s policy.Server
	var sealed, urlSealed []byte // headers and the URL, encrypted (see secrets.go)
	err := row.Scan(&s.Label, &s.URL, &s.Description, &sealed, &s.DefaultPolicy, &s.Enabled,
		&s.CreatedAt, &s.UpdatedAt, &s.RefreshedAt, &s.RefreshError, &s.ToolCount, &s.DefaultPolicyLocked, &s.FirstDiscoveredAt,
		&s.Health.Status, &s.Health.Since, &s.Health.LastError, &s.Health.CheckedAt, &s.Health.OKAt, &s.ApprovalTTLSeconds,
		&s.ReadOnlyHints, &s.Health.ListMS, &s.Health.Failures, &urlSealed, &s.UnmaskedResults)
	if err == nil {
		s.Headers, err = openHeaders(box(), s.Label, sealed)
	}
	if err == nil {
		s.URL, err = openURL(box(), s.Label, s.URL, urlSealed)
	}
	return s, err
}

func (r serverStore) List(ctx context.Context) ([]policy.Server, error) {
	rows, err := r.q.Query(ctx, `SELECT `+serverCols+` FROM mcp_servers s ORDER BY s.label`)
	if err != nil {
		return nil, translate(err, "list servers")
	}
	out := []policy.Server{}
	for rows.Next() {
		s, err := scanServer(rows)
		if err != nil {
			rows.Close()
			return nil, translate(err, "list servers")
		}
		out = append(out, s)
	}
	return out, translate(rows.Err(), "list servers")
}

func (r serverStore) Get(ctx context.Context, label string, lock bool) (policy.Server, error) {
	q := `SELECT ` + serverCols + ` FROM mcp_servers s WHERE s.label = $1`
	if lock {
		q += ` FOR UPDATE`
	}
	s, err := scanServer(r.q.QueryRow(ctx, q, label))
	err = translate(err, "read server")
	if apperr.KindOf(err) == apperr.NotFound {
		return s, notFound(label)
	}
	return s, err
}

func notFound(label string) error {
	return apperr.NotFoundf("server_not_found", "there is no MCP server with the label %q; GET /api/mcp/servers lists them", label)
}

func (r serverStore) Insert(ctx context.Context, s policy.Server) (policy.Server, error) {
	sealed, err := sealHeaders(box(), s.Label, s.Headers)
	if err != nil {
		return s, err
	}
	shownURL, urlSealed := sealURL(box(), s.Label, s.URL)
	_, err = r.q.Exec(ctx, `INSERT INTO mcp_servers (label, url, description, headers_enc, default_policy, enabled, default_policy_locked,
			approval_ttl_seconds, url_enc, read_only_hints, mask_results)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, coalesce(nullif($10, ''), 'claimed'), NOT $11)`, s.Label, shownURL, s.Description, sealed, s.DefaultPolicy, s.Enabled, s.DefaultPolicyLocked,
		s.ApprovalTTLSeconds, urlSealed, s.ReadOnlyHints, s.UnmaskedResults)
	if err := translate(err, "create server"); err != nil {
		if apperr.KindOf(err) == apperr.Conflict {
			return s, apperr.Wrap(err, apperr.Conflict, "duplicate_label",
				"an MCP server labelled %q already exists (labels are unique regardless of case); choose another label", s.Label)
		}
		return s, err
	}
	return r.Get(ctx, s.Label, false)
}

func (r serverStore) Update(ctx context.Context, s policy.Server) (policy.Server, error) {
	sealed, err := sealHeaders(box(), s.Label, s.Headers)
	if err != nil {
		return s, err
	}
	shownURL, urlSealed := sealURL(box(), s.Label, s.URL)
	tag, err := r.q.Exec(ctx, `UPDATE mcp_servers SET url = $2, description = $3, headers_enc = $4,
		default_policy = $5, enabled = $6, default_policy_locked = $7, approval_ttl_seconds = $8, url_enc = $9,
		read_only_hints = coalesce(nullif($10, ''), read_only_hints), mask_results = NOT $11, updated_at = now() WHERE label = $1`,
		s.Label, shownURL, s.Description, sealed, s.DefaultPolicy, s.Enabled, s.DefaultPolicyLocked, s.ApprovalTTLSeconds, urlSealed, s.ReadOnlyHints,
		s.UnmaskedResults)
	if err != nil {
		return s, translate(err, "update server")
	}
	if tag.RowsAffected() == 0 {
		return s, notFound(s.Label)
	}
	return r.Get(ctx, s.Label, false)
}

func (r serverStore) Delete(ctx context.Context, label string) error {
	tag, err := r.q.Exec(ctx, `DELETE FROM mcp_servers WHERE label = $1`, label)
	if err != nil {
		return translate(err, "delete server")
	}
	if tag.RowsAffected() == 0 {
		return notFound(label)
	}
	return nil
}

func (r serverStore) SetRefreshResult(ctx context.Context, label string, at time.Time, refreshErr string) error {
	_, err := r.q.Exec(ctx, `UPDATE mcp_servers SET tools_refreshed_at = $2, tools_refresh_error = nullif($3, '')
		WHERE label = $1`, label, at, refreshErr)
	return translate(err, "record tool refresh")
}

func (r serverStore) MarkDiscovered(ctx context.Context, label string, at time.Time) error {
	_, err := r.q.Exec(ctx, `UPDATE mcp_servers SET first_discovered_at = $2
		WHERE label = $1 AND first_discovered_at IS NULL`, label, at)
	return translate(err, "record first discovery")
}
