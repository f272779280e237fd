// Package authdb is the Postgres implementation of auth's stores (accounts,
// failed sign-ins, sessions, personal API tokens, one-time tokens and their
// cleanup): one type per store, all on one pool. It builds on internal/postgres
// (its error translation and transactions).
package authdb

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/auth"
)

// Users is the Postgres implementation of auth.Users.
type Users struct{ pool *pgxpool.Pool }

// NewUsers returns Users on pool.
func NewUsers(pool *pgxpool.Pool) *Users { return &Users{pool: pool} }

// LoginFailures is the Postgres implementation of auth.LoginFailures.
type LoginFailures struct{ pool *pgxpool.Pool }

// Sessions is the Postgres implementation of auth.Sessions.
type Sessions struct{ pool *pgxpool.Pool }

// NewSessions returns Sessions on pool.
func NewSessions(pool *pgxpool.Pool) *Sessions { return &Sessions{pool: pool} }

// Tokens is the Postgres implementation of auth.Tokens.
type Tokens struct{ pool *pgxpool.Pool }

// NewTokens returns Tokens on pool.
func NewTokens(pool *pgxpool.Pool) *Tokens { return &Tokens{pool: pool} }

// OneTimeTokens is the Postgres implementation of auth.OneTimeTokens.
type OneTimeTokens struct{ pool *pgxpool.Pool }

// Cleaner is the Postgres implementation of auth.Cleaner.
type Cleaner struct{ pool *pgxpool.Pool }

// Stores returns every store auth.New needs, all on pool.
func Stores(pool *pgxpool.Pool) auth.Stores {
	return auth.Stores{Users: NewUsers(pool), LoginFailures: &LoginFailures{pool: pool}, Sessions: &Sessions{pool: pool},
		Tokens: &Tokens{pool: pool}, OneTime: &OneTimeTokens{pool: pool}, Cleaner: &Cleaner{pool: pool}}
}
