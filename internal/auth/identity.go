// Package auth is who is calling: accounts, sessions, personal API tokens,
// sign-in (local passwords and OIDC) and roles. Handlers and services read
// the caller from the request context with UserFrom; the HTTP layer puts it
// there after checking the session cookie or the bearer token.
package auth

import (
	"context"
	"time"
)

// Role is what a user may do.
type Role string

// The roles. An admin manages servers, workspace policies and defaults,
// users, and reads the whole audit log; a member has their own
// conversations, decisions, personal policies and audit entries.
const (
	Admin  Role = "admin"
	Member Role = "member"
)

// Valid reports whether r is a role.
func (r Role) Valid() bool { return r == Admin || r == Member }

// User is an account.
type User struct {
	ID          string     `json:"id"` // usr_<hex>
	Email       string     `json:"email"`
	Role        Role       `json:"role"`
	Disabled    bool       `json:"disabled"`
	CreatedAt   time.Time  `json:"created_at"`
	LastLoginAt *time.Time `json:"last_login_at"`
}

// IsAdmin reports whether u is an admin.
func (u User) IsAdmin() bool { return u.Role == Admin }

type ctxKey struct{}

// WithUser returns ctx carrying u as the caller.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, ctxKey{}, u)
}

// UserFrom returns the caller carried by ctx, if any.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(ctxKey{}).(User)
	return u, ok
}

// System is the actor of changes Toolgate makes itself (registering the
// offline demo server at start, say): it is never a signed-in caller.
var System = User{ID: "system", Email: "toolgate", Role: Admin}
