package auth

import (
	"log/slog"
	"time"
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

// Service is sign-in, accounts and personal API tokens: the three parts New
// puts together on one set of stores, one clock and one set of options.
type Service struct {
	SignIn    *SignIn    // passwords, sessions, OIDC, one-time links, the built-in admin of mode none
	Accounts  *Accounts  // users, roles, disabling, the first admin
	APITokens *APITokens // personal API tokens
}

// base is what every part reads: the options, the log and the clock (one
// for all parts, so SetClock moves them together).
type base struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time
}

// New returns the parts on st, with defaults for zero options.
func New(st Stores, opts Options, log *slog.Logger) *Service {
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
	b := &base{opts: opts, log: log, now: time.Now}
	return &Service{
		SignIn: &SignIn{base: b, users: st.Users, failures: st.LoginFailures, sessions: st.Sessions, tokens: st.Tokens,
			oneTime: st.OneTime, cleaner: st.Cleaner},
		Accounts:  &Accounts{base: b, users: st.Users},
		APITokens: &APITokens{base: b, users: st.Users, tokens: st.Tokens},
	}
}

// SetClock replaces the clock of every part (tests).
func (s *Service) SetClock(now func() time.Time) { s.SignIn.now = now }
