package authdb

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/postgres"
)

// LoginFailures counts key's failures since since.
func (s *LoginFailures) LoginFailures(ctx context.Context, key string, since time.Time) (int, time.Time, error) {
	var n int
	var oldest *time.Time
	err := s.pool.QueryRow(ctx, `SELECT count(*), min(at) FROM login_failures WHERE key = $1 AND at > $2`, key, since).Scan(&n, &oldest)
	if oldest == nil {
		oldest = &since
	}
	return n, *oldest, postgres.Translate(err, "count failed sign-ins")
}

// RecordLoginFailure adds a failure and forgets the key's old ones.
func (s *LoginFailures) RecordLoginFailure(ctx context.Context, key string, at, forgetBefore time.Time) error {
	return postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM login_failures WHERE key = $1 AND at <= $2`, key, forgetBefore); err != nil {
			return postgres.Translate(err, "forget old failed sign-ins")
		}
		_, err := tx.Exec(ctx, `INSERT INTO login_failures (key, at) VALUES ($1, $2)`, key, at)
		return postgres.Translate(err, "record failed sign-in")
	})
}

// ClearLoginFailures forgets the key's failures.
func (s *LoginFailures) ClearLoginFailures(ctx context.Context, key string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM login_failures WHERE key = $1`, key)
	return postgres.Translate(err, "clear failed sign-ins")
}

// CreateSession stores a session.
func (s *Sessions) CreateSession(ctx context.Context, ss auth.Session) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO sessions (token_hash, user_id, created_at, last_seen_at, expires_at, user_agent, remote_addr)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, ss.Hash, ss.UserID, ss.CreatedAt, ss.LastSeenAt, ss.ExpiresAt, ss.UserAgent, ss.RemoteAddr)
	return postgres.Translate(err, "create session")
}

// SessionUser returns a session and its user.
func (s *Sessions) SessionUser(ctx context.Context, hash []byte) (auth.Session, auth.User, error) {
	var ss auth.Session
	var u auth.User
	err := s.pool.QueryRow(ctx, `SELECT s.token_hash, s.user_id, s.created_at, s.last_seen_at, s.expires_at, `+userCols+`
		FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1`, hash).
		Scan(&ss.Hash, &ss.UserID, &ss.CreatedAt, &ss.LastSeenAt, &ss.ExpiresAt,
			&u.ID, &u.Email, &u.Role, &u.Disabled, &u.CreatedAt, &u.LastLoginAt)
	err = postgres.Translate(err, "read session")
	if apperr.KindOf(err) == apperr.NotFound {
		return ss, u, apperr.Wrap(err, apperr.NotFound, "session_not_found", "no such session")
	}
	return ss, u, err
}

// TouchSession sets a session's last_seen_at.
func (s *Sessions) TouchSession(ctx context.Context, hash []byte, at time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE sessions SET last_seen_at = $2 WHERE token_hash = $1`, hash, at)
	return postgres.Translate(err, "touch session")
}

// DeleteSession revokes a session.
func (s *Sessions) DeleteSession(ctx context.Context, hash []byte) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE token_hash = $1`, hash)
	return postgres.Translate(err, "delete session")
}

// DeleteExpired deletes sessions past their absolute or idle expiry, used or
// expired one-time tokens, and failed sign-ins older than failuresBefore.
func (s *Cleaner) DeleteExpired(ctx context.Context, now, idleBefore, failuresBefore time.Time) (auth.Cleaned, error) {
	var c auth.Cleaned
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		for _, q := range []struct {
			n    *int64
			sql  string
			args []any
		}{
			{&c.Sessions, `DELETE FROM sessions WHERE expires_at <= $1 OR last_seen_at <= $2`, []any{now, idleBefore}},
			{&c.OneTime, `DELETE FROM one_time_tokens WHERE used_at IS NOT NULL OR expires_at <= $1`, []any{now}},
			{&c.LoginFailures, `DELETE FROM login_failures WHERE at <= $1`, []any{failuresBefore}},
		} {
			tag, err := tx.Exec(ctx, q.sql, q.args...)
			if err != nil {
				return postgres.Translate(err, "delete expired sign-in rows")
			}
			*q.n = tag.RowsAffected()
		}
		return nil
	})
	return c, err
}
