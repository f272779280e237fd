package auth

import (
	"context"
	"strings"

	"github.com/toolgate/toolgate/internal/apperr"
)

// NewUser is an account an admin creates.
type NewUser struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Role     Role   `json:"role"`
}

// UserChange is an admin's change to an account; nil leaves a field as is.
type UserChange struct {
	Role     *Role   `json:"role"`
	Disabled *bool   `json:"disabled"`
	Password *string `json:"password"`
}

// Users lists every account (admins only).
func (s *Accounts) Users(ctx context.Context) ([]User, error) {
	if _, err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	return s.users.Users(ctx)
}

// CreateUser creates an account (admins only). A password is required in
// local mode; in OIDC mode an account without one links at its first sign-in.
func (s *Accounts) CreateUser(ctx context.Context, n NewUser) (User, error) {
	if _, err := requireAdmin(ctx); err != nil {
		return User{}, err
	}
	if n.Role == "" {
		n.Role = Member
	}
	a, err := newAccount(n.Email, n.Password, n.Role, s.opts.Mode == ModeLocal)
	if err != nil {
		return User{}, err
	}
	u, err := s.users.CreateUser(ctx, a)
	if apperr.KindOf(err) == apperr.Conflict {
		return User{}, apperr.Wrap(err, apperr.Conflict, "email_taken", "an account with the email %s already exists", a.Email)
	}
	return u, err
}

// UpdateUser changes an account's role, disabled flag or password (admins
// only). The last active admin cannot be demoted or disabled.
func (s *Accounts) UpdateUser(ctx context.Context, id string, ch UserChange) (User, error) {
	if _, err := requireAdmin(ctx); err != nil {
		return User{}, err
	}
	if err := validUserID(id); err != nil {
		return User{}, err
	}
	var p UserPatch
	if ch.Role != nil {
		if !ch.Role.Valid() {
			return User{}, apperr.Invalidf("invalid_role", "role", "role must be admin or member (got %q)", *ch.Role)
		}
		p.Role = ch.Role
	}
	p.Disabled = ch.Disabled
	if ch.Password != nil {
		if err := ValidatePassword(*ch.Password); err != nil {
			return User{}, err
		}
		h, err := HashPassword(*ch.Password)
		if err != nil {
			return User{}, err
		}
		p.PasswordHash = &h
	}
	if p.Role == nil && p.Disabled == nil && p.PasswordHash == nil {
		return User{}, apperr.New(apperr.Invalid, "empty_change", "send at least one of role, disabled, password")
	}
	return s.users.UpdateUser(ctx, id, p)
}

// DisableUser disables an account and revokes its sessions and tokens
// (admins only); accounts are never deleted, so the audit log keeps its actors.
func (s *Accounts) DisableUser(ctx context.Context, id string) error {
	disabled := true
	_, err := s.UpdateUser(ctx, id, UserChange{Disabled: &disabled})
	return err
}

func validUserID(id string) error {
	if !strings.HasPrefix(id, "usr_") || len(id) != 28 {
		return apperr.NotFoundf("user_not_found", "there is no user %q; GET /api/users lists them", id)
	}
	return nil
}

// UserNotFound is the error for an unknown user id.
func UserNotFound(id string) error {
	return apperr.NotFoundf("user_not_found", "there is no user %q; GET /api/users lists them", id)
}

// LastAdmin is the error for demoting or disabling the last active admin.
func LastAdmin() error {
	return apperr.New(apperr.Conflict, "last_admin",
		"this is the last active admin; make another user an admin first")
}
