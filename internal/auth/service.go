package auth

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/mail"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
)

// Mode is how people sign in.
type Mode string

// The sign-in modes.
const (
	ModeLocal Mode = "local" // email and password, accounts in Postgres
	ModeOIDC  Mode = "oidc"  // an OpenID Connect provider
	ModeNone  Mode = "none"  // nobody signs in: every request is one built-in admin (loopback only)
)

// LocalEmail is the built-in admin every request acts as in mode none.
const LocalEmail = "local@localhost"

// Options tune the service.
type Options struct {
	Mode        Mode
	IdleTimeout time.Duration // a session unused this long ends (SESSION_IDLE_TIMEOUT)
	MaxAge      time.Duration // a session ends this long after sign-in whatever happens (SESSION_MAX_AGE)
	MaxFailures int           // failed sign-ins per email and client address ...
	// MaxAccountFailures caps failed sign-ins per email from any address
	// in the window (default 50), against guesses spread over addresses.
	MaxAccountFailures int
	FailureWindow      time.Duration // ... within this window before 429
	CleanEvery         time.Duration // sign-ins delete expired rows at most this often (default 10 minutes)
	OIDC               *OIDC         // mode oidc: the provider
	// SignInLink: a one-time sign-in link is printed at every start (the
	// offline demo); the sign-in page points at it.
	SignInLink bool
}

// Service is sign-in, sessions, tokens and accounts.
type Service struct {
	users    Users
	failures LoginFailures
	sessions Sessions
	tokens   Tokens
	oneTime  OneTimeTokens
	cleaner  Cleaner
	opts     Options
	log      *slog.Logger
	now      func() time.Time

	mu    sync.RWMutex
	local User // mode none: the built-in admin

	lastClean atomic.Int64 // unix nanoseconds of the last cleanup
}

// NewService returns the service on st, with defaults for zero options.
func NewService(st Stores, opts Options, log *slog.Logger) *Service {
	if opts.Mode == "" {
		opts.Mode = ModeLocal
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 12 * time.Hour
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = 7 * 24 * time.Hour
	}
	if opts.MaxFailures <= 0 {
		opts.MaxFailures = 5
	}
	if opts.MaxAccountFailures <= 0 {
		opts.MaxAccountFailures = 50
	}
	if opts.FailureWindow <= 0 {
		opts.FailureWindow = 15 * time.Minute
	}
	if opts.CleanEvery <= 0 {
		opts.CleanEvery = 10 * time.Minute
	}
	return &Service{users: st.Users, failures: st.LoginFailures, sessions: st.Sessions, tokens: st.Tokens,
		oneTime: st.OneTime, cleaner: st.Cleaner, opts: opts, log: log, now: time.Now}
}

// Mode is how people sign in.
func (s *Service) Mode() Mode { return s.opts.Mode }

// OIDC is the provider sign-in of mode oidc (nil in other modes).
func (s *Service) OIDC() *OIDC {
	if s.opts.Mode != ModeOIDC {
		return nil
	}
	return s.opts.OIDC
}

// SetClock replaces the clock (tests).
func (s *Service) SetClock(now func() time.Time) { s.now = now }

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
func (s *Service) Status(ctx context.Context) (Status, error) {
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
func (s *Service) Login(ctx context.Context, email, password string, c Client) (NewSession, error) {
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
func (s *Service) admit(ctx context.Context, key string, limit int, what string) error {
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

func (s *Service) openSession(ctx context.Context, u User, c Client) (NewSession, error) {
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

// Cleanup deletes what can no longer sign anyone in: sessions past their
// absolute or idle expiry, used or expired one-time tokens, and failed
// sign-ins older than the rate limit's window.
func (s *Service) Cleanup(ctx context.Context) (Cleaned, error) {
	now := s.now()
	s.lastClean.Store(now.UnixNano())
	return s.cleaner.DeleteExpired(ctx, now, now.Add(-s.opts.IdleTimeout), now.Add(-s.opts.FailureWindow))
}

// maybeCleanup runs Cleanup when the last one is CleanEvery old: sign-ins
// are what create these rows, so cleaning as they happen keeps the tables
// small without a ticker of its own. A failure is logged, never the
// sign-in's.
func (s *Service) maybeCleanup(ctx context.Context) {
	now := s.now().UnixNano()
	last := s.lastClean.Load()
	if now-last < int64(s.opts.CleanEvery) || !s.lastClean.CompareAndSwap(last, now) {
		return
	}
	if c, err := s.Cleanup(ctx); err != nil {
		s.log.Warn("delete expired sessions, links and failed sign-ins", "err", err)
	} else if c != (Cleaned{}) {
		s.log.Debug("deleted expired sign-in rows", "sessions", c.Sessions, "one_time_tokens", c.OneTime, "login_failures", c.LoginFailures)
	}
}

// Unauthenticated is the error for a request without valid credentials.
func Unauthenticated() error {
	return apperr.New(apperr.Unauthenticated, "unauthenticated",
		"sign in first, or send a personal API token as 'Authorization: Bearer tg_…' (create one under Tokens or with POST /api/tokens)")
}

// SessionUser returns the user of the session whose cookie holds secret. An
// unknown, revoked, idle or expired session, or a disabled user, is
// Unauthenticated. last_seen_at moves at most once a minute.
func (s *Service) SessionUser(ctx context.Context, secret string) (User, error) {
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
func (s *Service) TokenUser(ctx context.Context, secret string) (User, error) {
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
func (s *Service) Logout(ctx context.Context, secret string) error {
	if secret == "" {
		return nil
	}
	return s.sessions.DeleteSession(ctx, HashSecret(secret))
}

// LocalUser is the built-in admin of mode none (after EnsureLocalUser).
func (s *Service) LocalUser() (User, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.local, s.local.ID != ""
}

// EnsureLocalUser makes sure the built-in admin of mode none exists.
func (s *Service) EnsureLocalUser(ctx context.Context) (User, error) {
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

// EnsureAdmin creates an admin with email and password when there is no
// account yet (TOOLGATE_ADMIN_EMAIL and TOOLGATE_ADMIN_PASSWORD); with
// accounts already there it does nothing and reports false. An empty
// password makes an account that signs in only by link.
func (s *Service) EnsureAdmin(ctx context.Context, email, password string) (User, bool, error) {
	n, err := s.users.CountUsers(ctx)
	if err != nil || n > 0 {
		return User{}, false, err
	}
	a, err := s.newAccount(email, password, Admin, password != "")
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
func (s *Service) HasUsers(ctx context.Context) (bool, error) {
	n, err := s.users.CountUsers(ctx)
	return n > 0, err
}

// CreateSetupToken returns a one-time token that creates the first admin.
func (s *Service) CreateSetupToken(ctx context.Context, ttl time.Duration) (string, error) {
	secret, hash := NewSecret("")
	return secret, s.oneTime.CreateOneTime(ctx, hash, PurposeSetup, "", s.now().Add(ttl))
}

// CreateLoginLink returns a one-time token that signs userID in.
func (s *Service) CreateLoginLink(ctx context.Context, userID string, ttl time.Duration) (string, error) {
	secret, hash := NewSecret("")
	return secret, s.oneTime.CreateOneTime(ctx, hash, PurposeLogin, userID, s.now().Add(ttl))
}

// ActiveUser is the enabled account with email, for `toolgate link EMAIL`.
func (s *Service) ActiveUser(ctx context.Context, email string) (User, error) {
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
func (s *Service) OldestActiveAdmin(ctx context.Context) (User, error) {
	return s.users.OldestActiveAdmin(ctx)
}

// Setup creates the first admin with the one-time setup token and signs it in.
func (s *Service) Setup(ctx context.Context, token, email, password string, c Client) (NewSession, error) {
	if s.opts.Mode != ModeLocal {
		return NewSession{}, apperr.New(apperr.Invalid, "setup_disabled", "setup is only for AUTH_MODE=local")
	}
	a, err := s.newAccount(email, password, Admin, true)
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
func (s *Service) UseLink(ctx context.Context, token string, c Client) (NewSession, error) {
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

// OIDCLogin links or creates the account of an OIDC identity, sets its role
// (re-evaluated at every sign-in) and signs it in.
func (s *Service) OIDCLogin(ctx context.Context, id Identity, c Client) (NewSession, error) {
	role := Member
	if id.Admin {
		role = Admin
	}
	email := normEmail(id.Email)
	acct, err := s.users.AccountByOIDC(ctx, id.Issuer, id.Subject)
	switch {
	case apperr.KindOf(err) == apperr.NotFound:
		byEmail, err := s.users.AccountByEmail(ctx, email)
		switch {
		case apperr.KindOf(err) == apperr.NotFound:
			u, err := s.users.CreateUser(ctx, Account{User: User{ID: newID("usr_"), Email: email, Role: role},
				OIDCIssuer: id.Issuer, OIDCSubject: id.Subject})
			if err != nil {
				return NewSession{}, err
			}
			acct.User = u
		case err != nil:
			return NewSession{}, err
		case byEmail.OIDCSubject != "":
			return NewSession{}, apperr.New(apperr.Conflict, "email_taken",
				"the account %s is linked to another identity of the provider; ask an admin", email)
		case !id.EmailVerified:
			// Linking by email hands the account to whoever holds the
			// address: only when the provider says it verified it.
			return NewSession{}, apperr.New(apperr.Unauthenticated, "email_not_verified",
				"the account %s exists, but the sign-in provider does not say it verified this email (email_verified), so it is not linked; verify the email at the provider, or ask an admin", email)
		default:
			acct = byEmail
		}
	case err != nil:
		return NewSession{}, err
	}
	if acct.Disabled {
		return NewSession{}, apperr.New(apperr.Unauthenticated, "account_disabled", "this account is disabled; ask an admin to enable it")
	}
	u, err := s.users.LinkOIDC(ctx, acct.ID, id.Issuer, id.Subject, email, role)
	if err != nil {
		return NewSession{}, err
	}
	return s.openSession(ctx, u, c)
}

// Identity is who an OIDC provider says signed in.
type Identity struct {
	Issuer, Subject, Email string
	EmailVerified          bool // the provider says it verified Email (claim email_verified)
	Admin                  bool // the verified email is in OIDC_ADMIN_EMAILS or the groups claim has OIDC_ADMIN_GROUP
}

func (s *Service) newAccount(email, password string, role Role, needPassword bool) (Account, error) {
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

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
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
