package authdb

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/postgres"
)

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
	err = postgres.Translate(err, what)
	if apperr.KindOf(err) == apperr.NotFound {
		return apperr.Wrap(err, apperr.NotFound, "user_not_found", "there is no such user; GET /api/users lists them")
	}
	return err
}

// CountUsers counts every account.
func (s *Users) CountUsers(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM users`).Scan(&n)
	return n, postgres.Translate(err, "count users")
}

// CreateUser inserts a; the first admin inherits the rows from before accounts
// in the same transaction.
func (s *Users) CreateUser(ctx context.Context, a auth.Account) (auth.User, error) {
	var u auth.User
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
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
		return u, postgres.Translate(err, "create user")
	}
	if u.Role == auth.Admin && admins == 0 {
		return u, adoptPreAccountRows(ctx, tx, u)
	}
	return u, nil
}

func lockUsers(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('toolgate.users'))`)
	return postgres.Translate(err, "lock users")
}

// countAdmins counts the admins (disabled ones too) other than except.
func countAdmins(ctx context.Context, tx pgx.Tx, except string) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM users WHERE role = 'admin' AND id <> $1`, except).Scan(&n)
	return n, postgres.Translate(err, "count admins")
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
			return postgres.Translate(err, "give the first admin the rows from before accounts")
		}
	}
	return nil
}

// SetupFirstAdmin consumes the setup token and creates the first admin.
func (s *Users) SetupFirstAdmin(ctx context.Context, hash []byte, a auth.Account, now time.Time) (auth.User, error) {
	var u auth.User
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := useOneTime(ctx, tx, hash, auth.PurposeSetup, now); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM users`).Scan(&n); err != nil {
			return postgres.Translate(err, "count users")
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
func (s *Users) AccountByEmail(ctx context.Context, email string) (auth.Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountCols+` FROM users u WHERE lower(u.email) = lower($1)`, email))
	return a, userNotFound(err, "find user by email")
}

// AccountByOIDC finds the account linked to an OIDC identity.
func (s *Users) AccountByOIDC(ctx context.Context, issuer, subject string) (auth.Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountCols+` FROM users u
		WHERE u.oidc_issuer = $1 AND u.oidc_subject = $2`, issuer, subject))
	return a, userNotFound(err, "find user by OIDC identity")
}

// User reads one account.
func (s *Users) User(ctx context.Context, id string) (auth.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userCols+` FROM users u WHERE u.id = $1`, id))
	return u, userNotFound(err, "read user")
}

// Users lists every account, oldest first.
func (s *Users) Users(ctx context.Context) ([]auth.User, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+userCols+` FROM users u ORDER BY u.created_at, u.id`)
	if err != nil {
		return nil, postgres.Translate(err, "list users")
	}
	out := []auth.User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			rows.Close()
			return nil, postgres.Translate(err, "list users")
		}
		out = append(out, u)
	}
	return out, postgres.Translate(rows.Err(), "list users")
}

// OldestActiveAdmin is the first admin still enabled.
func (s *Users) OldestActiveAdmin(ctx context.Context) (auth.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userCols+` FROM users u
		WHERE u.role = 'admin' AND NOT u.disabled ORDER BY u.created_at, u.id LIMIT 1`))
	return u, userNotFound(err, "find the oldest admin")
}

// UpdateUser applies p, keeping at least one active admin; disabling revokes
// the user's sessions and tokens in the same transaction.
func (s *Users) UpdateUser(ctx context.Context, id string, p auth.UserPatch) (auth.User, error) {
	var u auth.User
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// Lock every active admin: two admins demoting each other at once
		// must not leave none.
		rows, err := tx.Query(ctx, `SELECT id FROM users WHERE role = 'admin' AND NOT disabled ORDER BY id FOR UPDATE`)
		if err != nil {
			return postgres.Translate(err, "lock admins")
		}
		admins, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return postgres.Translate(err, "lock admins")
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
			return postgres.Translate(err, "update user")
		}
		if u.Disabled || p.PasswordHash != nil {
			// A disabled account or a new password (an admin resetting one
			// that may be known to someone else) ends every session and
			// revokes every personal token: a token made with a stolen
			// password must not outlive the reset.
			if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE user_id = $1`, id); err != nil {
				return postgres.Translate(err, "revoke sessions")
			}
			if _, err := tx.Exec(ctx, `DELETE FROM api_tokens WHERE user_id = $1`, id); err != nil {
				return postgres.Translate(err, "revoke tokens")
			}
		}
		return nil
	})
	return u, err
}

// LinkOIDC sets an account's OIDC identity, email and role. An account that
// becomes the first admin this way (the provider made it admin after it
// first signed in as a member) adopts the rows from before accounts.
func (s *Users) LinkOIDC(ctx context.Context, id, issuer, subject, email string, role auth.Role) (auth.User, error) {
	var u auth.User
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockUsers(ctx, tx); err != nil {
			return err
		}
		others, err := countAdmins(ctx, tx, id)
		if err != nil {
			return err
		}
		u, err = scanUser(tx.QueryRow(ctx, `UPDATE users u SET oidc_issuer = $2, oidc_subject = $3, email = $4,
			role = $5, updated_at = now() WHERE id = $1 RETURNING `+userCols, id, issuer, subject, email, role))
		if apperr.KindOf(postgres.Translate(err, "")) == apperr.Conflict {
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
func (s *Users) TouchLogin(ctx context.Context, id string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE users SET last_login_at = $2 WHERE id = $1`, id, at)
	return postgres.Translate(err, "record sign-in")
}
