package auth

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
)

// LocalUser is the built-in admin of mode none (after EnsureLocalUser).
func (s *SignIn) LocalUser() (User, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.local, s.local.ID != ""
}

// EnsureLocalUser makes sure the built-in admin of mode none exists.
func (s *SignIn) EnsureLocalUser(ctx context.Context) (User, error) {
	a, err := s.users.AccountByEmail(ctx, LocalEmail)
	switch {
	case apperr.KindOf(err) == apperr.NotFound:
		a.User, err = s.users.CreateUser(ctx, Account{User: User{ID: newID("usr_"), Email: LocalEmail, Role: Admin}})
		if err != nil {
			return User{}, err
		}
	case err != nil:
		return User{}, err
	case a.Role != Admin || a.Disabled:
		role, enabled := Admin, false
		if a.User, err = s.users.UpdateUser(ctx, a.ID, UserPatch{Role: &role, Disabled: &enabled}); err != nil {
			return User{}, err
		}
	}
	s.mu.Lock()
	s.local = a.User
	s.mu.Unlock()
	return a.User, nil
}

// CreateSetupToken returns a one-time token that creates the first admin.
func (s *SignIn) CreateSetupToken(ctx context.Context, ttl time.Duration) (string, error) {
	secret, hash := NewSecret("")
	return secret, s.oneTime.CreateOneTime(ctx, hash, PurposeSetup, "", s.now().Add(ttl))
}

// CreateLoginLink returns a one-time token that signs userID in.
func (s *SignIn) CreateLoginLink(ctx context.Context, userID string, ttl time.Duration) (string, error) {
	secret, hash := NewSecret("")
	return secret, s.oneTime.CreateOneTime(ctx, hash, PurposeLogin, userID, s.now().Add(ttl))
}

// Setup creates the first admin with the one-time setup token and signs it in.
func (s *SignIn) Setup(ctx context.Context, token, email, password string, c Client) (NewSession, error) {
	if s.opts.Mode != ModeLocal {
		return NewSession{}, apperr.New(apperr.Invalid, "setup_disabled", "setup is only for AUTH_MODE=local")
	}
	a, err := newAccount(email, password, Admin, true)
	if err != nil {
		return NewSession{}, err
	}
	u, err := s.users.SetupFirstAdmin(ctx, HashSecret(token), a, s.now())
	if apperr.KindOf(err) == apperr.NotFound {
		return NewSession{}, apperr.New(apperr.Unauthenticated, "invalid_setup_token",
			"this setup link is unknown, used or expired; run `toolgate link` on the machine Toolgate runs on for a new one, or sign in if the admin exists")
	}
	if err != nil {
		return NewSession{}, err
	}
	return s.openSession(ctx, u, c)
}

// UseLink signs in with a one-time sign-in link.
func (s *SignIn) UseLink(ctx context.Context, token string, c Client) (NewSession, error) {
	id, err := s.oneTime.UseOneTime(ctx, HashSecret(token), PurposeLogin, s.now())
	if apperr.KindOf(err) == apperr.NotFound {
		return NewSession{}, apperr.New(apperr.Unauthenticated, "invalid_link",
			"this sign-in link is unknown, used or expired; run `toolgate link` on the machine Toolgate runs on for a new one, or sign in")
	}
	if err != nil {
		return NewSession{}, err
	}
	u, err := s.users.User(ctx, id)
	if err != nil {
		return NewSession{}, err
	}
	if u.Disabled {
		return NewSession{}, apperr.New(apperr.Unauthenticated, "account_disabled", "this account is disabled; ask an admin to enable it")
	}
	return s.openSession(ctx, u, c)
}
