package auth

import (
	"context"
	"errors"
	"net/mail"
	"strings"

	"github.com/toolgate/toolgate/internal/apperr"
)

// Accounts is who has an account: users, their roles, disabling them
// (admins only), and the first admin.
type Accounts struct {
	*base
	users Users
}

// EnsureAdmin creates an admin with email and password when there is no
// account yet (TOOLGATE_ADMIN_EMAIL and TOOLGATE_ADMIN_PASSWORD); with
// accounts already there it does nothing and reports false. An empty
// password makes an account that signs in only by link.
func (s *Accounts) EnsureAdmin(ctx context.Context, email, password string) (User, bool, error) {
	n, err := s.users.CountUsers(ctx)
	if err != nil || n > 0 {
		return User{}, false, err
	}
	a, err := newAccount(email, password, Admin, password != "")
	if err != nil {
		return User{}, false, err
	}
	u, err := s.users.CreateUser(ctx, a)
	if apperr.KindOf(err) == apperr.Conflict {
		return User{}, false, nil // another replica created it first
	}
	return u, err == nil, err
}

// HasUsers reports whether any account exists.
func (s *Accounts) HasUsers(ctx context.Context) (bool, error) {
	n, err := s.users.CountUsers(ctx)
	return n > 0, err
}

// ActiveUser is the enabled account with email, for `toolgate link EMAIL`.
func (s *Accounts) ActiveUser(ctx context.Context, email string) (User, error) {
	acct, err := s.users.AccountByEmail(ctx, normEmail(email))
	if err != nil {
		return User{}, err
	}
	if acct.Disabled {
		return User{}, apperr.New(apperr.Conflict, "account_disabled", "the account %s is disabled; enable it first", acct.Email)
	}
	return acct.User, nil
}

// OldestActiveAdmin is the admin the offline demo's sign-in link is for.
func (s *Accounts) OldestActiveAdmin(ctx context.Context) (User, error) {
	return s.users.OldestActiveAdmin(ctx)
}

func newAccount(email, password string, role Role, needPassword bool) (Account, error) {
	f := apperr.Fields{}
	email = normEmail(email)
	if err := validEmail(email); err != "" {
		f.Add("email", "%s", err)
	}
	if !role.Valid() {
		f.Add("role", "role must be admin or member")
	}
	if needPassword || password != "" {
		if err := ValidatePassword(password); err != nil {
			e, _ := apperr.As(err)
			if len(f) == 0 {
				return Account{}, err
			}
			f.Add("password", "%s", e.Message)
		}
	}
	if err := f.Err("invalid_user", f.Join()); err != nil {
		return Account{}, err
	}
	a := Account{User: User{ID: newID("usr_"), Email: email, Role: role}}
	if password != "" {
		h, err := HashPassword(password)
		if err != nil {
			return Account{}, err
		}
		a.PasswordHash = h
	}
	return a, nil
}

func normEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func validEmail(email string) string {
	if len(email) < 3 || len(email) > 254 {
		return "email must be an address such as ada@example.com (3 to 254 characters)"
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || a.Name != "" {
		return "email must be a plain address such as ada@example.com"
	}
	return ""
}

// caller returns the signed-in user of ctx; a missing one is our bug.
func caller(ctx context.Context) (User, error) {
	u, ok := UserFrom(ctx)
	if !ok {
		return User{}, errors.New("auth: no user on the request context")
	}
	return u, nil
}

func requireAdmin(ctx context.Context) (User, error) {
	u, err := caller(ctx)
	if err != nil {
		return u, err
	}
	if !u.IsAdmin() {
		return u, AdminOnly()
	}
	return u, nil
}

// AdminOnly is the error for a member calling an admin's route.
func AdminOnly() error {
	return apperr.New(apperr.Forbidden, "admin_only", "only an admin may do this; ask an admin of this Toolgate")
}
