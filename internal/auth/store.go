package auth

import (
	"context"
	"time"
)

// Account is a user with what signing in needs.
type Account struct {
	User
	PasswordHash string // "" when the account has no password
	OIDCIssuer   string
	OIDCSubject  string
}

// Session is a signed-in browser. The secret sits in its cookie; only the
// hash is stored.
type Session struct {
	Hash       []byte
	UserID     string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time // absolute expiry
	UserAgent  string
	RemoteAddr string
}

// Token is a personal API token as listed (never with its secret).
type Token struct {
	ID         string     `json:"id"`
	UserID     string     `json:"-"`
	Name       string     `json:"name"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// UserPatch changes some of a user's fields; nil leaves a field as is.
type UserPatch struct {
	Role         *Role
	Disabled     *bool
	PasswordHash *string
}

// Purpose is what a one-time token is for.
type Purpose string

// One-time token purposes.
const (
	PurposeSetup Purpose = "setup" // create the first admin
	PurposeLogin Purpose = "login" // sign a user in (the offline demo's link)
)

// Stores is what the Service keeps its state in, one narrow store per
// kind of row. internal/postgres/authdb fills all of them (authdb.Stores).
type Stores struct {
	Users         Users
	LoginFailures LoginFailures
	Sessions      Sessions
	Tokens        Tokens
	OneTime       OneTimeTokens
	Cleaner       Cleaner
}

// Users keeps accounts: who may sign in, with which role and identity.
type Users interface {
	// CountUsers counts every account, disabled ones too.
	CountUsers(ctx context.Context) (int, error)
	// CreateUser inserts a (duplicate email: Conflict); a first admin adopts pre-account rows in the same transaction.
	CreateUser(ctx context.Context, a Account) (User, error)
	// SetupFirstAdmin consumes a setup token and creates a if no account exists (Conflict; bad token: NotFound).
	SetupFirstAdmin(ctx context.Context, hash []byte, a Account, now time.Time) (User, error)
	// AccountByEmail finds an account by email, ignoring case (NotFound).
	AccountByEmail(ctx context.Context, email string) (Account, error)
	// AccountByOIDC finds the account linked to (issuer, subject) (NotFound).
	AccountByOIDC(ctx context.Context, issuer, subject string) (Account, error)
	// User reads one account (NotFound).
	User(ctx context.Context, id string) (User, error)
	// Users lists every account, oldest first.
	Users(ctx context.Context) ([]User, error)
	// OldestActiveAdmin is the first admin still enabled (NotFound).
	OldestActiveAdmin(ctx context.Context) (User, error)
	// UpdateUser applies p (losing the last active admin: Conflict last_admin); disabling also revokes sessions and tokens.
	UpdateUser(ctx context.Context, id string, p UserPatch) (User, error)
	// LinkOIDC sets the email, role and OIDC identity of an account.
	LinkOIDC(ctx context.Context, id, issuer, subject, email string, role Role) (User, error)
	// TouchLogin records a successful sign-in.
	TouchLogin(ctx context.Context, id string, at time.Time) error
}

// LoginFailures keeps failed sign-ins per rate-limit key.
type LoginFailures interface {
	// LoginFailures counts key's failures since since and returns the oldest of them.
	LoginFailures(ctx context.Context, key string, since time.Time) (int, time.Time, error)
	// RecordLoginFailure adds a failure for key and forgets key's failures older than forgetBefore.
	RecordLoginFailure(ctx context.Context, key string, at, forgetBefore time.Time) error
	// ClearLoginFailures forgets key's failures.
	ClearLoginFailures(ctx context.Context, key string) error
}

// Sessions keeps signed-in browsers by the hash of their cookie secret.
type Sessions interface {
	// CreateSession stores s.
	CreateSession(ctx context.Context, s Session) error
	// SessionUser returns the session with hash and its user (NotFound).
	SessionUser(ctx context.Context, hash []byte) (Session, User, error)
	// TouchSession sets the session's last_seen_at.
	TouchSession(ctx context.Context, hash []byte, at time.Time) error
	// DeleteSession revokes a session (no error when it is gone already).
	DeleteSession(ctx context.Context, hash []byte) error
}

// Tokens keeps personal API tokens by the hash of their secret.
type Tokens interface {
	// CreateToken stores t under hash.
	CreateToken(ctx context.Context, t Token, hash []byte) error
	// Tokens lists userID's tokens, newest first.
	Tokens(ctx context.Context, userID string) ([]Token, error)
	// DeleteToken deletes userID's token id (NotFound when it is not theirs).
	DeleteToken(ctx context.Context, userID, id string) error
	// TokenUser returns the token with hash and its user (NotFound).
	TokenUser(ctx context.Context, hash []byte) (Token, User, error)
	// TouchToken sets the token's last_used_at.
	TouchToken(ctx context.Context, id string, at time.Time) error
}

// OneTimeTokens keeps setup and sign-in links that work once.
type OneTimeTokens interface {
	// CreateOneTime stores a one-time token.
	CreateOneTime(ctx context.Context, hash []byte, p Purpose, userID string, expires time.Time) error
	// UseOneTime marks an unused, unexpired token of purpose p used and returns its user id ("" for setup; NotFound otherwise).
	UseOneTime(ctx context.Context, hash []byte, p Purpose, now time.Time) (string, error)
}

// Cleaner deletes what has expired across sessions, one-time tokens and failed sign-ins.
type Cleaner interface {
	// DeleteExpired deletes sessions expired by now or idle since idleBefore, spent one-time tokens, and failures up to failuresBefore.
	DeleteExpired(ctx context.Context, now, idleBefore, failuresBefore time.Time) (Cleaned, error)
}

// Cleaned counts the rows DeleteExpired deleted.
type Cleaned struct {
	Sessions, OneTime, LoginFailures int64
}
