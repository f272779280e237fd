package authdb

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/postgres"
)

// CreateToken stores a personal API token's hash.
func (s *Tokens) CreateToken(ctx context.Context, t auth.Token, hash []byte) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO api_tokens (id, user_id, name, token_hash, created_at) VALUES ($1, $2, $3, $4, $5)`,
		t.ID, t.UserID, t.Name, hash, t.CreatedAt)
	return postgres.Translate(err, "create token")
}

// Tokens lists a user's tokens, newest first.
func (s *Tokens) Tokens(ctx context.Context, userID string) ([]auth.Token, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, user_id, name, created_at, last_used_at FROM api_tokens
		WHERE user_id = $1 ORDER BY created_at DESC, id`, userID)
	if err != nil {
		return nil, postgres.Translate(err, "list tokens")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (auth.Token, error) {
		var t auth.Token
		err := r.Scan(&t.ID, &t.UserID, &t.Name, &t.CreatedAt, &t.LastUsedAt)
		return t, err
	})
	if out == nil {
		out = []auth.Token{}
	}
	return out, postgres.Translate(err, "list tokens")
}

// DeleteToken deletes one of a user's tokens.
func (s *Tokens) DeleteToken(ctx context.Context, userID, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM api_tokens WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return postgres.Translate(err, "delete token")
	}
	if tag.RowsAffected() == 0 {
		return apperr.NotFoundf("token_not_found", "you have no token %q; GET /api/tokens lists yours", id)
	}
	return nil
}

// TokenUser returns a token and its user.
func (s *Tokens) TokenUser(ctx context.Context, hash []byte) (auth.Token, auth.User, error) {
	var t auth.Token
	var u auth.User
	err := s.pool.QueryRow(ctx, `SELECT t.id, t.user_id, t.name, t.created_at, t.last_used_at, `+userCols+`
		FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1`, hash).
		Scan(&t.ID, &t.UserID, &t.Name, &t.CreatedAt, &t.LastUsedAt,
			&u.ID, &u.Email, &u.Role, &u.Disabled, &u.CreatedAt, &u.LastLoginAt)
	err = postgres.Translate(err, "read token")
	if apperr.KindOf(err) == apperr.NotFound {
		return t, u, apperr.Wrap(err, apperr.NotFound, "token_not_found", "no such token")
	}
	return t, u, err
}

// TouchToken sets a token's last_used_at.
func (s *Tokens) TouchToken(ctx context.Context, id string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE api_tokens SET last_used_at = $2 WHERE id = $1`, id, at)
	return postgres.Translate(err, "touch token")
}

// CreateOneTime stores a one-time token.
func (s *OneTimeTokens) CreateOneTime(ctx context.Context, hash []byte, p auth.Purpose, userID string, expires time.Time) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO one_time_tokens (token_hash, purpose, user_id, expires_at)
		VALUES ($1, $2, nullif($3, ''), $4)`, hash, p, userID, expires)
	return postgres.Translate(err, "create one-time token")
}

// UseOneTime marks a one-time token used.
func (s *OneTimeTokens) UseOneTime(ctx context.Context, hash []byte, p auth.Purpose, now time.Time) (string, error) {
	return useOneTime(ctx, s.pool, hash, p, now)
}

func useOneTime(ctx context.Context, q postgres.Querier, hash []byte, p auth.Purpose, now time.Time) (string, error) {
	var userID *string
	err := q.QueryRow(ctx, `UPDATE one_time_tokens SET used_at = $3
		WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > $3 RETURNING user_id`, hash, p, now).Scan(&userID)
	err = postgres.Translate(err, "use one-time token")
	if apperr.KindOf(err) == apperr.NotFound {
		return "", apperr.Wrap(err, apperr.NotFound, "token_not_found", "no such one-time token")
	}
	if err != nil || userID == nil { // a setup token names no user
		return "", err
	}
	return *userID, nil
}
