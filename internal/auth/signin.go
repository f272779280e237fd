package auth

import (
	"context"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
)

// SignIn is who may come in: passwords and the rate limit on them,
// sessions, personal API tokens as credentials, OIDC, one-time setup and
// sign-in links, and the built-in admin of mode none.
type SignIn struct {
	*base
	users    Users
	failures LoginFailures
	sessions Sessions
	tokens   Tokens
	oneTime  OneTimeTokens
	cleaner  Cleaner

	mu    sync.RWMutex
	local User // mode none: the built-in admin

	lastClean atomic.Int64 // unix nanoseconds of the last cleanup
}

// Mode is how people sign in.
func (s *SignIn) Mode() Mode { return s.opts.Mode }

// OIDC is the provider sign-in of mode oidc (nil in other modes).
func (s *SignIn) OIDC() *OIDC {
	if s.opts.Mode != ModeOIDC {
		return nil
	}
	return s.opts.OIDC
}

// Status is what the sign-in page needs to know.
type Status struct {
	AuthMode      Mode `json:"auth_mode"`
	SetupRequired bool `json:"setup_required"`
	OIDC          bool `json:"oidc"`
	// SignInLink: Toolgate prints a one-time sign-in link when it starts
	// (the offline demo), so the sign-in page can say where to look.
	SignInLink bool `json:"sign_in_link"`
}

// Status reports the mode and whether the first admin is still to be created.
func (s *SignIn) Status(ctx context.Context) (Status, error) {
	st := Status{AuthMode: s.opts.Mode, OIDC: s.opts.Mode == ModeOIDC, SignInLink: s.opts.SignInLink && s.opts.Mode == ModeLocal}
	if s.opts.Mode == ModeLocal {
		n, err := s.users.CountUsers(ctx)
		if err != nil {
			return st, err
		}
		st.SetupRequired = n == 0
	}
	return st, nil
}

// Client is where a sign-in comes from.
type Client struct {
	Addr      string // the client's IP address
	UserAgent string
}

// NewSession is a session just created; Secret goes in the cookie.
type NewSession struct {
	User    User
	Secret  string
	Expires time.Time
}

var errInvalidCredentials = apperr.New(apperr.Unauthenticated, "invalid_credentials",
	"the email or password is wrong; check both and try again")

// Login checks email and password and opens a session. A wrong password and
// an unknown email cost the same time and give the same error; too many
// failures for one email from one address are refused with TooMany.
func (s *SignIn) Login(ctx context.Context, email, password string, c Client) (NewSession, error) {
	if s.opts.Mode != ModeLocal {
		return NewSession{}, apperr.New(apperr.Invalid, "password_login_disabled",
			"sign-in with a password is off: AUTH_MODE is %s", s.opts.Mode)
	}
	s.maybeCleanup(ctx)
	email = normEmail(email)
	if len(password) > MaxPasswordLen {
		return NewSession{}, ValidatePassword(password)
	}
	// Two limits: one email from one address (MaxFailures), and one email
	// from anywhere (MaxAccountFailures, higher), so guesses spread over
	// many addresses are capped too.
	key, accountKey := email+"|"+c.Addr, "account|"+email
	if err := s.admit(ctx, key, s.opts.MaxFailures, "for this email from this address"); err != nil {
		return NewSession{}, err
	}
	if err := s.admit(ctx, accountKey, s.opts.MaxAccountFailures, "for this email"); err != nil {
		return NewSession{}, err
	}
	acct, err := s.users.AccountByEmail(ctx, email)
	if err != nil && apperr.KindOf(err) != apperr.NotFound {
		return NewSession{}, err
	}
	hash := acct.PasswordHash
	if err != nil || hash == "" {
		hash = dummyHash
	}
	ok := CheckPassword(hash, password) && err == nil && acct.PasswordHash != ""
	if !ok {
		return NewSession{}, errInvalidCredentials // recorded above
	}
	if acct.Disabled {
		return NewSession{}, apperr.New(apperr.Unauthenticated, "account_disabled",
			"this account is disabled; ask an admin to enable it")
	}
	for _, k := range []string{key, accountKey} {
		if err := s.failures.ClearLoginFailures(ctx, k); err != nil {
			return NewSession{}, err
		}
	}
	return s.openSession(ctx, acct.User, c)
}

// admit counts this sign-in attempt under key, refusing it with TooMany when
// limit attempts already failed within the window. The attempt counts as a
// failure before the password is checked, and the count is read again:
// guesses sent in parallel each see the ones recorded before them, so no
// more than limit are checked per window however many arrive at once. The
// right password clears them.
func (s *SignIn) admit(ctx context.Context, key string, limit int, what string) error {
	now := s.now()
	since := now.Add(-s.opts.FailureWindow)
	tooMany := func(oldest time.Time) error {
		wait := max(int(math.Ceil(oldest.Add(s.opts.FailureWindow).Sub(now).Seconds())), 1)
		e := apperr.New(apperr.TooMany, "too_many_attempts",
			"too many failed sign-ins %s; try again in %d seconds", what, wait)
		e.RetryAfter = wait
		return e
	}
	n, oldest, err := s.failures.LoginFailures(ctx, key, since)
	if err != nil {
		return err
	}
	if n >= limit {
		return tooMany(oldest)
	}
	if err := s.failures.RecordLoginFailure(ctx, key, now, since); err != nil {
		return err
	}
	if n, oldest, err = s.failures.LoginFailures(ctx, key, since); err != nil {
		return err
	}
	if n > limit {
		return tooMany(oldest)
	}
	return nil
}

func (s *SignIn) openSession(ctx context.Context, u User, c Client) (NewSession, error) {
	s.maybeCleanup(ctx)
	secret, hash := NewSecret("")
	now := s.now()
	sess := Session{Hash: hash, UserID: u.ID, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(s.opts.MaxAge),
		UserAgent: truncate(c.UserAgent, 512), RemoteAddr: c.Addr}
	if err := s.sessions.CreateSession(ctx, sess); err != nil {
		return NewSession{}, err
	}
	if err := s.users.TouchLogin(ctx, u.ID, now); err != nil {
		return NewSession{}, err
	}
	u.LastLoginAt = &now
	return NewSession{User: u, Secret: secret, Expires: sess.ExpiresAt}, nil
}

// Unauthenticated is the error for a request without valid credentials.
func Unauthenticated() error {
	return apperr.New(apperr.Unauthenticated, "unauthenticated",
		"sign in first, or send a personal API token as 'Authorization: Bearer tg_…' (create one under Tokens or with POST /api/tokens)")
}

// SessionUser returns the user of the session whose cookie holds secret. An
// unknown, revoked, idle or expired session, or a disabled user, is
// Unauthenticated. last_seen_at moves at most once a minute.
func (s *SignIn) SessionUser(ctx context.Context, secret string) (User, error) {
	if secret == "" {
		return User{}, Unauthenticated()
	}
	hash := HashSecret(secret)
	sess, u, err := s.sessions.SessionUser(ctx, hash)
	if apperr.KindOf(err) == apperr.NotFound {
		return User{}, Unauthenticated()
	}
	if err != nil {
		return User{}, err
	}
	now := s.now()
	if u.Disabled || !now.Before(sess.ExpiresAt) || now.Sub(sess.LastSeenAt) >= s.opts.IdleTimeout {
		return User{}, Unauthenticated()
	}
	if now.Sub(sess.LastSeenAt) >= time.Minute {
		if err := s.sessions.TouchSession(ctx, hash, now); err != nil {
			return User{}, err
		}
	}
	return u, nil
}

// TokenUser returns the user of a personal API token. An unknown or deleted
// token, or a disabled user, is Unauthenticated.
func (s *SignIn) TokenUser(ctx context.Context, secret string) (User, error) {
	if !strings.HasPrefix(secret, TokenPrefix) {
		return User{}, apperr.New(apperr.Unauthenticated, "unauthenticated",
			"the bearer token is not a Toolgate personal API token (they start with %s); create one under Tokens or with POST /api/tokens", TokenPrefix)
	}
	tok, u, err := s.tokens.TokenUser(ctx, HashSecret(secret))
	if apperr.KindOf(err) == apperr.NotFound {
		return User{}, Unauthenticated()
	}
	if err != nil {
		return User{}, err
	}
	if u.Disabled {
		return User{}, Unauthenticated()
	}
	now := s.now()
	if tok.LastUsedAt == nil || now.Sub(*tok.LastUsedAt) >= time.Minute {
		if err := s.tokens.TouchToken(ctx, tok.ID, now); err != nil {
			return User{}, err
		}
	}
	return u, nil
}

// Logout revokes the session whose cookie holds secret.
func (s *SignIn) Logout(ctx context.Context, secret string) error {
	if secret == "" {
		return nil
	}
	return s.sessions.DeleteSession(ctx, HashSecret(secret))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
