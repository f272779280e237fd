package postgres

import (
	"context"
	"time"
)

// healthStore is policy.HealthStore.
type healthStore struct{ q querier }

// The health of MCP servers (policy.Health), kept on mcp_servers so every
// replica sees the same.

func (r healthStore) MarkHealthy(ctx context.Context, label string, at time.Time) error {
	_, err := r.q.Exec(ctx, `UPDATE mcp_servers SET health_status = 'ok', health_since = NULL, health_error = NULL,
		health_checked_at = $2, health_ok_at = $2, health_failures = 0 WHERE label = $1`, label, at)
	return translate(err, "record a server reachable")
}

// sameURL reads the server's stored URL (shown, sealed) and says whether it
// is still url ("" matches any): a URL with a query is stored encrypted
// (secrets.go), so it is compared here, and an update applies only to the
// row as read (url = shown AND url_enc IS NOT DISTINCT FROM sealed).
func (r healthStore) sameURL(ctx context.Context, label, url string) (shown string, sealed []byte, same bool, err error) {
	if url == "" {
		return "", nil, true, nil
	}
	err = r.q.QueryRow(ctx, `SELECT url, url_enc FROM mcp_servers WHERE label = $1`, label).Scan(&shown, &sealed)
	if noRows(err) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, translate(err, "read a server's URL")
	}
	cur, err := openURL(box(), label, shown, sealed)
	if err != nil || cur != url {
		return "", nil, false, err // changed meanwhile: the result was another URL's
	}
	return shown, sealed, true, nil
}

func (r healthStore) MarkListed(ctx context.Context, label, url string, at time.Time, took time.Duration, slow string) error {
	shown, sealed, same, err := r.sameURL(ctx, label, url)
	if err != nil || !same {
		return err
	}
	_, err = r.q.Exec(ctx, `UPDATE mcp_servers SET
		health_status = CASE WHEN $5 = '' THEN 'ok' ELSE 'slow' END,
		health_since = CASE WHEN $5 = '' THEN NULL WHEN health_status = 'slow' THEN health_since ELSE $3 END,
		health_error = nullif($5, ''),
		health_checked_at = $3, health_ok_at = $3, health_failures = 0, health_list_ms = $4
		WHERE label = $1 AND ($2 = '' OR (url = $6 AND url_enc IS NOT DISTINCT FROM $7))`,
		label, url, at, took.Milliseconds(), slow, shown, sealed)
	return translate(err, "record a server's listing time")
}

// MarkUnreachable records the failure when the server still has the URL
// that failed (url; "" for any).
func (r healthStore) MarkUnreachable(ctx context.Context, label, url, reason string, at time.Time) error {
	shown, sealed, same, err := r.sameURL(ctx, label, url)
	if err != nil || !same {
		return err
	}
	_, err = r.q.Exec(ctx, `UPDATE mcp_servers SET health_status = 'unreachable',
		health_since = CASE WHEN health_status = 'unreachable' THEN health_since ELSE $4 END,
		health_error = $3, health_checked_at = $4
		WHERE label = $1 AND ($2 = '' OR (url = $5 AND url_enc IS NOT DISTINCT FROM $6))`, label, url, reason, at, shown, sealed)
	return translate(err, "record a server unreachable")
}

func (r healthStore) CountFailure(ctx context.Context, label, url, reason string, at time.Time, threshold int) (int, bool, error) {
	shown, sealed, same, err := r.sameURL(ctx, label, url)
	if err != nil || !same {
		return 0, false, err
	}
	var failures int
	var down bool
	err = r.q.QueryRow(ctx, `UPDATE mcp_servers SET health_failures = health_failures + 1,
		health_status = CASE WHEN health_failures + 1 >= $5 THEN 'unreachable' ELSE health_status END,
		health_since = CASE WHEN health_status = 'unreachable' THEN health_since WHEN health_failures + 1 >= $5 THEN $4 ELSE health_since END,
		health_error = CASE WHEN health_failures + 1 >= $5 THEN $3 ELSE health_error END,
		health_checked_at = $4
		WHERE label = $1 AND ($2 = '' OR (url = $6 AND url_enc IS NOT DISTINCT FROM $7))
		RETURNING health_failures, health_status = 'unreachable'`, label, url, reason, at, threshold, shown, sealed).Scan(&failures, &down)
	if noRows(err) {
		return 0, false, nil
	}
	return failures, down, translate(err, "count a server's failure")
}

func (r healthStore) ResetFailures(ctx context.Context, label, url string) error {
	shown, sealed, same, err := r.sameURL(ctx, label, url)
	if err != nil || !same {
		return err
	}
	_, err = r.q.Exec(ctx, `UPDATE mcp_servers SET health_failures = 0
		WHERE label = $1 AND ($2 = '' OR (url = $3 AND url_enc IS NOT DISTINCT FROM $4)) AND health_failures > 0`, label, url, shown, sealed)
	return translate(err, "reset a server's failures")
}

func (r healthStore) ClaimRechecks(ctx context.Context, every time.Duration, limit int) ([]string, error) {
	return r.claim(ctx, `health_status IN ('unreachable', 'slow')`, every, limit)
}

func (r healthStore) ClaimChecks(ctx context.Context, every time.Duration, limit int) ([]string, error) {
	return r.claim(ctx, `health_status = 'ok'`, every, limit)
}

// claim takes up to limit enabled servers in the state where says, not
// checked for every, and marks them checked now.
func (r healthStore) claim(ctx context.Context, where string, every time.Duration, limit int) ([]string, error) {
	rows, err := r.q.Query(ctx, `UPDATE mcp_servers SET health_checked_at = now()
		WHERE label IN (
			SELECT label FROM mcp_servers
			WHERE `+where+` AND enabled
			  AND (health_checked_at IS NULL OR health_checked_at <= now() - make_interval(secs => $1))
			ORDER BY health_checked_at NULLS FIRST, label
			LIMIT $2
			FOR UPDATE SKIP LOCKED)
		  AND `+where+`
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
