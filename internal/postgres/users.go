package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
)

// UserStore is the Postgres implementation of the auth stores (auth.Users,
// auth.LoginFailures, auth.Sessions, auth.Tokens, auth.OneTimeTokens and
// auth.Cleaner).
type UserStore struct{ pool *pgxpool.Pool }

// NewUserStore returns a UserStore on pool.
func NewUserStore(pool *pgxpool.Pool) *UserStore { return &UserStore{pool: pool} }

// AuthStores returns every store auth.Service needs, all on pool.
func AuthStores(pool *pgxpool.Pool) auth.Stores {
	s := NewUserStore(pool)
	return auth.Stores{Users: s, LoginFailures: s, Sessions: s, Tokens: s, OneTime: s, Cleaner: s}
}

const userCols = `u.id, u.email, u.role, u.disabled, u.created_at, u.last_login_at`
const accountCols = userCols + `, coalesce(u.password_hash, ''), coalesce(u.oidc_issuer, ''), coalesce(u.oidc_subject, '')`

func scanUser(row pgx.Row) (auth.User, error) {
	var u auth.User
	err := row.Scan(&u.ID, &u.Email, &u.Role, &u.Disabled, &u.CreatedAt, &u.LastLoginAt)
	return u, err
}

func scanAccount(row pgx.Row) (auth.Account, error) {
	var a auth.Account
	err := row.Scan(&a.ID, &a.Email, &a.Role, &a.Disabled, &a.CreatedAt, &a.LastLoginAt,
		&a.PasswordHash, &a.OIDCIssuer, &a.OIDCSubject)
	return a, err
}

func userNotFound(err error, what string) error {
	err = translate(err, what)
	if apperr.KindOf(err) == apperr.NotFound {
		return apperr.Wrap(err, apperr.NotFound, "user_not_found", "there is no such user; GET /api/users lists them")
	}
	return err
}

// CountUsers counts every account.
func (s *UserStore) CountUsers(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM users`).Scan(&n)
	return n, translate(err, "count users")
}

// CreateUser inserts a; the first admin inherits the rows from before accounts
// in the same transaction.
func (s *UserStore) CreateUser(ctx context.Context, a auth.Account) (auth.User, error) {
	var u auth.User
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		u, err = createUser(ctx, tx, a)
		return err
	})
	return u, err
}

func createUser(ctx context.Context, tx pgx.Tx, a auth.Account) (auth.User, error) {
	// One account created at a time, so "the first admin" is well defined
	// across replicas.
	if err := lockUsers(ctx, tx); err != nil {
		return auth.User{}, err
	}
	admins, err := countAdmins(ctx, tx, "")
	if err != nil {
		return auth.User{}, err
	}
	u, err := scanUser(tx.QueryRow(ctx, `INSERT INTO users AS u (id, email, password_hash, role, oidc_issuer, oidc_subject)
		VALUES ($1, $2, nullif($3, ''), $4, nullif($5, ''), nullif($6, '')) RETURNING `+userCols,
		a.ID, a.Email, a.PasswordHash, a.Role, a.OIDCIssuer, a.OIDCSubject))
	if err != nil {
		return u, translate(err, "create user")
	}
	if u.Role == auth.Admin && admins == 0 {
		return u, adoptPreAccountRows(ctx, tx, u)
	}
	return u, nil
}

func lockUsers(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('toolgate.users'))`)
	return translate(err, "lock users")
}

// countAdmins counts the admins (disabled ones too) other than except.
func countAdmins(ctx context.Context, tx pgx.Tx, except string) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM users WHERE role = 'admin' AND id <> $1`, except).Scan(&n)
	return n, translate(err, "count admins")
}

// adoptPreAccountRows gives the first admin the rows written before there
// were accounts: ownerless conversations, audit entries without an actor
// account, workspace policies without an author. Rows written since always
// name their user, so only the first admin ever finds any.
func adoptPreAccountRows(ctx context.Context, tx pgx.Tx, u auth.User) error {
	for _, q := range []string{
		`UPDATE conversations SET owner_id = @id WHERE owner_id IS NULL`,
		`UPDATE audit_log SET actor_id = @id, actor = @email WHERE actor_id IS NULL`,
		`UPDATE tool_policies SET updated_by_id = @id WHERE updated_by_id IS NULL`,
	} {
		if _, err := tx.Exec(ctx, q, pgx.NamedArgs{"id": u.ID, "email": u.Email}); err != nil {
			return translate(err, "give the first admin the rows from before accounts")
		}
	}
	return nil
}

// SetupFirstAdmin consumes the setup token and creates the first admin.
func (s *UserStore) SetupFirstAdmin(ctx context.Context, hash []byte, a auth.Account, now time.Time) (auth.User, error) {
	var u auth.User
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := useOneTime(ctx, tx, hash, auth.PurposeSetup, now); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM users`).Scan(&n); err != nil {
			return translate(err, "count users")
		}
		if n > 0 {
			return apperr.New(apperr.Conflict, "setup_done", "the first admin exists already; sign in instead")
		}
		var err error
		u, err = createUser(ctx, tx, a)
		return err
	})
	return u, err
}

// AccountByEmail finds an account by email, ignoring case.
func (s *UserStore) AccountByEmail(ctx context.Context, email string) (auth.Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountCols+` FROM users u WHERE lower(u.email) = lower($1)`, email))
	return a, userNotFound(err, "find user by email")
}

// AccountByOIDC finds the account linked to an OIDC identity.
func (s *UserStore) AccountByOIDC(ctx context.Context, issuer, subject string) (auth.Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountCols+` FROM users u
		WHERE u.oidc_issuer = $1 AND u.oidc_subject = $2`, issuer, subject))
	return a, userNotFound(err, "find user by OIDC identity")
}

// User reads one account.
func (s *UserStore) User(ctx context.Context, id string) (auth.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userCols+` FROM users u WHERE u.id = $1`, id))
	return u, userNotFound(err, "read user")
}

// Users lists every account, oldest first.
func (s *UserStore) Users(ctx context.Context) ([]auth.User, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+userCols+` FROM users u ORDER BY u.created_at, u.id`)
	if err != nil {
		return nil, translate(err, "list users")
	}
	out := []auth.User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			rows.Close()
			return nil, translate(err, "list users")
		}
		out = append(out, u)
	}
	return out, translate(rows.Err(), "list users")
}

// OldestActiveAdmin is the first admin still enabled.
func (s *UserStore) OldestActiveAdmin(ctx context.Context) (auth.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userCols+` FROM users u
		WHERE u.role = 'admin' AND NOT u.disabled ORDER BY u.created_at, u.id LIMIT 1`))
	return u, userNotFound(err, "find the oldest admin")
}

// UpdateUser applies p, keeping at least one active admin; disabling revokes
// the user's sessions and tokens in the same transaction.
func (s *UserStore) UpdateUser(ctx context.Context, id string, p auth.UserPatch) (auth.User, error) {
	var u auth.User
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		// Lock every active admin: two admins demoting each other at once
		// must not leave none.
		rows, err := tx.Query(ctx, `SELECT id FROM users WHERE role = 'admin' AND NOT disabled ORDER BY id FOR UPDATE`)
		if err != nil {
			return translate(err, "lock admins")
		}
		admins, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return translate(err, "lock admins")
		}
		cur, err := scanUser(tx.QueryRow(ctx, `SELECT `+userCols+` FROM users u WHERE u.id = $1 FOR UPDATE`, id))
		if err != nil {
			return userNotFound(err, "read user")
		}
		activeAdmin := cur.Role == auth.Admin && !cur.Disabled
		losesAdmin := (p.Role != nil && *p.Role != auth.Admin) || (p.Disabled != nil && *p.Disabled)
		if activeAdmin && losesAdmin && len(admins) <= 1 {
			return auth.LastAdmin()
		}
		u, err = scanUser(tx.QueryRow(ctx, `UPDATE users u SET role = coalesce($2, role), disabled = coalesce($3, disabled),
			password_hash = coalesce($4, password_hash), updated_at = now() WHERE id = $1 RETURNING `+userCols,
			id, p.Role, p.Disabled, p.PasswordHash))
		if err != nil {
			return translate(err, "update user")
		}
		if u.Disabled || p.PasswordHash != nil {
			// A disabled account or a new password (an admin resetting one
			// that may be known to someone else) ends every session and
			// revokes every personal token: a token made with a stolen
			// password must not outlive the reset.
			if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE user_id = $1`, id); err != nil {
				return translate(err, "revoke sessions")
			}
			if _, err := tx.Exec(ctx, `DELETE FROM api_tokens WHERE user_id = $1`, id); err != nil {
				return translate(err, "revoke tokens")
			}
		}
		return nil
	})
	return u, err
}

// LinkOIDC sets an account's OIDC identity, email and role. An account that
// becomes the first admin this way (the provider made it admin after it
// first signed in as a member) adopts the rows from before accounts.
func (s *UserStore) LinkOIDC(ctx context.Context, id, issuer, subject, email string, role auth.Role) (auth.User, error) {
	var u auth.User
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockUsers(ctx, tx); err != nil {
			return err
		}
		others, err := countAdmins(ctx, tx, id)
		if err != nil {
			return err
		}
		u, err = scanUser(tx.QueryRow(ctx, `UPDATE users u SET oidc_issuer = $2, oidc_subject = $3, email = $4,
			role = $5, updated_at = now() WHERE id = $1 RETURNING `+userCols, id, issuer, subject, email, role))
		if apperr.KindOf(translate(err, "")) == apperr.Conflict {
			return apperr.Wrap(err, apperr.Conflict, "email_taken", "another account already has the email %s; ask an admin", email)
		}
		if err != nil {
			return userNotFound(err, "link OIDC identity")
		}
		if u.Role == auth.Admin && others == 0 {
			return adoptPreAccountRows(ctx, tx, u)
		}
		return nil
	})
	return u, err
}

// TouchLogin records a successful sign-in.
func (s *UserStore) TouchLogin(ctx context.Context, id string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE users SET last_login_at = $2 WHERE id = $1`, id, at)
	return translate(err, "record sign-in")
}

// LoginFailures counts key's failures since since.
func (s *UserStore) LoginFailures(ctx context.Context, key string, since time.Time) (int, time.Time, error) {
	var n int
	var oldest *time.Time
	err := s.pool.QueryRow(ctx, `SELECT count(*), min(at) FROM login_failures WHERE key = $1 AND at > $2`, key, since).Scan(&n, &oldest)
	if oldest == nil {
		oldest = &since
	}
	return n, *oldest, translate(err, "count failed sign-ins")
}

// RecordLoginFailure adds a failure and forgets the key's old ones.
func (s *UserStore) RecordLoginFailure(ctx context.Context, key string, at, forgetBefore time.Time) error {
	return inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM login_failures WHERE key = $1 AND at <= $2`, key, forgetBefore); err != nil {
			return translate(err, "forget old failed sign-ins")
		}
		_, err := tx.Exec(ctx, `INSERT INTO login_failures (key, at) VALUES ($1, $2)`, key, at)
		return translate(err, "record failed sign-in")
	})
}

// ClearLoginFailures forgets the key's failures.
func (s *UserStore) ClearLoginFailures(ctx context.Context, key string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM login_failures WHERE key = $1`, key)
	return translate(err, "clear failed sign-ins")
}

// CreateSession stores a session.
func (s *UserStore) CreateSession(ctx context.Context, ss auth.Session) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO sessions (token_hash, user_id, created_at, last_seen_at, expires_at, user_agent, remote_addr)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, ss.Hash, ss.UserID, ss.CreatedAt, ss.LastSeenAt, ss.ExpiresAt, ss.UserAgent, ss.RemoteAddr)
	return translate(err, "create session")
}

// SessionUser returns a session and its user.
func (s *UserStore) SessionUser(ctx context.Context, hash []byte) (auth.Session, auth.User, error) {
	var ss auth.Session
	var u auth.User
	err := s.pool.QueryRow(ctx, `SELECT s.token_hash, s.user_id, s.created_at, s.last_seen_at, s.expires_at, `+userCols+`
		FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1`, hash).
		Scan(&ss.Hash, &ss.UserID, &ss.CreatedAt, &ss.LastSeenAt, &ss.ExpiresAt,
			&u.ID, &u.Email, &u.Role, &u.Disabled, &u.CreatedAt, &u.LastLoginAt)
	err = translate(err, "read session")
	if apperr.KindOf(err) == apperr.NotFound {
		return ss, u, apperr.Wrap(err, apperr.NotFound, "session_not_found", "no such session")
	}
	return ss, u, err
}

// TouchSession sets a session's last_seen_at.
func (s *UserStore) TouchSession(ctx context.Context, hash []byte, at time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE sessions SET last_seen_at = $2 WHERE token_hash = $1`, hash, at)
	return translate(err, "touch session")
}

// DeleteSession revokes a session.
func (s *UserStore) DeleteSession(ctx context.Context, hash []byte) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE token_hash = $1`, hash)
	return translate(err, "delete session")
}

// CreateToken stores a personal API token's hash.
func (s *UserStore) CreateToken(ctx context.Context, t auth.Token, hash []byte) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO api_tokens (id, user_id, name, token_hash, created_at) VALUES ($1, $2, $3, $4, $5)`,
		t.ID, t.UserID, t.Name, hash, t.CreatedAt)
	return translate(err, "create token")
}

// Tokens lists a user's tokens, newest first.
func (s *UserStore) Tokens(ctx context.Context, userID string) ([]auth.Token, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, user_id, name, created_at, last_used_at FROM api_tokens
		WHERE user_id = $1 ORDER BY created_at DESC, id`, userID)
	if err != nil {
		return nil, translate(err, "list tokens")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (auth.Token, error) {
		var t auth.Token
		err := r.Scan(&t.ID, &t.UserID, &t.Name, &t.CreatedAt, &t.LastUsedAt)
		return t, err
	})
	if out == nil {
		out = []auth.Token{}
	}
	return out, translate(err, "list tokens")
}

// DeleteToken deletes one of a user's tokens.
func (s *UserStore) DeleteToken(ctx context.Context, userID, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM api_tokens WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return translate(err, "delete token")
	}
	if tag.RowsAffected() == 0 {
		return apperr.NotFoundf("token_not_found", "you have no token %q; GET /api/tokens lists yours", id)
	}
	return nil
}

// TokenUser returns a token and its user.
func (s *UserStore) TokenUser(ctx context.Context, hash []byte) (auth.Token, auth.User, error) {
	var t auth.Token
	var u auth.User
	err := s.pool.QueryRow(ctx, `SELECT t.id, t.user_id, t.name, t.created_at, t.last_used_at, `+userCols+`
		FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1`, hash).
		Scan(&t.ID, &t.UserID, &t.Name, &t.CreatedAt, &t.LastUsedAt,
			&u.ID, &u.Email, &u.Role, &u.Disabled, &u.CreatedAt, &u.LastLoginAt)
	err = translate(err, "read token")
	if apperr.KindOf(err) == apperr.NotFound {
		return t, u, apperr.Wrap(err, apperr.NotFound, "token_not_found", "no such token")
	}
	return t, u, err
}

// TouchToken sets a token's last_used_at.
func (s *UserStore) TouchToken(ctx context.Context, id string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE api_tokens SET last_used_at = $2 WHERE id = $1`, id, at)
	return translate(err, "touch token")
}

// CreateOneTime stores a one-time token.
func (s *UserStore) CreateOneTime(ctx context.Context, hash []byte, p auth.Purpose, userID string, expires time.Time) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO one_time_tokens (token_hash, purpose, user_id, expires_at)
		VALUES ($1, $2, nullif($3, ''), $4)`, hash, p, userID, expires)
	return translate(err, "create one-time token")
}

// UseOneTime marks a one-time token used.
func (s *UserStore) UseOneTime(ctx context.Context, hash []byte, p auth.Purpose, now time.Time) (string, error) {
	return useOneTime(ctx, s.pool, hash, p, now)
}

func useOneTime(ctx context.Context, q querier, hash []byte, p auth.Purpose, now time.Time) (string, error) {
	var userID *string
	err := q.QueryRow(ctx, `UPDATE one_time_tokens SET used_at = $3
		WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > $3 RETURNING user_id`, hash, p, now).Scan(&userID)
	err = translate(err, "use one-time token")
	if apperr.KindOf(err) == apperr.NotFound {
		return "", apperr.Wrap(err, apperr.NotFound, "token_not_found", "no such one-time token")
	}
	if err != nil || userID == nil { // a setup token names no user
		return "", err
	}
	return *userID, nil
}

// DeleteExpired deletes sessions past their absolute or idle expiry, used or
// expired one-time tokens, and failed sign-ins older than failuresBefore.
func (s *UserStore) DeleteExpired(ctx context.Context, now, idleBefore, failuresBefore time.Time) (auth.Cleaned, error) {
	var c auth.Cleaned
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
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
				return translate(err, "delete expired sign-in rows")
			}
			*q.n = tag.RowsAffected()
		}
		return nil
	})
	return c, err
}
