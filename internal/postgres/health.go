package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// The health of MCP servers (policy.Health), kept on mcp_servers so every
// replica sees the same.

func (r repo) MarkHealthy(ctx context.Context, label string, at time.Time) error {
	_, err := r.q.Exec(ctx, `UPDATE mcp_servers SET health_status = 'ok', health_since = NULL, health_error = NULL,
		health_checked_at = $2, health_ok_at = $2 WHERE label = $1`, label, at)
	return translate(err, "record a server reachable")
}

// MarkUnreachable records the failure when the server still has the URL
// that failed (url; "" for any). A URL with a query is stored encrypted
// (secrets.go), so it is compared here, and the update applies only to
// the row as read.
func (r repo) MarkUnreachable(ctx context.Context, label, url, reason string, at time.Time) error {
	var shown string
	var sealed []byte
	if url != "" {
		err := r.q.QueryRow(ctx, `SELECT url, url_enc FROM mcp_servers WHERE label = $1`, label).Scan(&shown, &sealed)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return translate(err, "record a server unreachable")
		}
		cur, err := openURL(box(), label, shown, sealed)
		if err != nil || cur != url {
			return err // changed meanwhile: the failure was another URL's
		}
	}
	_, err := r.q.Exec(ctx, `UPDATE mcp_servers SET health_status = 'unreachable',
		health_since = CASE WHEN health_status = 'unreachable' THEN health_since ELSE $4 END,
		health_error = $3, health_checked_at = $4
		WHERE label = $1 AND ($2 = '' OR (url = $5 AND url_enc IS NOT DISTINCT FROM $6))`, label, url, reason, at, shown, sealed)
	return translate(err, "record a server unreachable")
}

func (r repo) ClaimRechecks(ctx context.Context, every time.Duration, limit int) ([]string, error) {
	rows, err := r.q.Query(ctx, `UPDATE mcp_servers SET health_checked_at = now()
		WHERE label IN (
			SELECT label FROM mcp_servers
			WHERE health_status = 'unreachable' AND enabled
			  AND (health_checked_at IS NULL OR health_checked_at <= now() - make_interval(secs => $1))
			ORDER BY health_checked_at NULLS FIRST, label
			LIMIT $2
			FOR UPDATE SKIP LOCKED)
		  AND health_status = 'unreachable'
		RETURNING label`, every.Seconds(), limit)
	if err != nil {
		return nil, translate(err, "claim servers to re-check")
	}
	var out []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			rows.Close()
			return nil, translate(err, "claim servers to re-check")
		}
		out = append(out, l)
	}
	return out, translate(rows.Err(), "claim servers to re-check")
}
