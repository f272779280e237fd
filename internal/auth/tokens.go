package auth

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/apperr"
)

// APITokens is personal API tokens: a user's own, and one issued at the
// server's terminal.
type APITokens struct {
	*base
	users  Users
	tokens Tokens
}

// NewToken is a personal API token just created: Token is its secret,
// shown this once.
type NewToken struct {
	Token
	Secret string
}

// Tokens lists the caller's personal API tokens.
func (s *APITokens) Tokens(ctx context.Context) ([]Token, error) {
	u, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	return s.tokens.Tokens(ctx, u.ID)
}

// CreateToken creates a personal API token for the caller.
func (s *APITokens) CreateToken(ctx context.Context, name string) (NewToken, error) {
	u, err := caller(ctx)
	if err != nil {
		return NewToken{}, err
	}
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > 100 {
		return NewToken{}, apperr.Invalidf("invalid_name", "name", "name must be 1 to 100 characters, e.g. \"laptop curl\"")
	}
	secret, hash := NewSecret(TokenPrefix)
	t := Token{ID: newID("tok_"), UserID: u.ID, Name: name, CreatedAt: s.now()}
	if err := s.tokens.CreateToken(ctx, t, hash); err != nil {
		return NewToken{}, err
	}
	return NewToken{Token: t, Secret: secret}, nil
}

// DeleteToken deletes one of the caller's tokens; another user's is NotFound.
func (s *APITokens) DeleteToken(ctx context.Context, id string) error {
	u, err := caller(ctx)
	if err != nil {
		return err
	}
	return s.tokens.DeleteToken(ctx, u.ID, id)
}

// IssueToken creates a personal API token for the account with email, for
// operators at the server's terminal (`api token create`): whoever can run
// the binary against the database can already do anything.
func (s *APITokens) IssueToken(ctx context.Context, email, name string) (NewToken, error) {
	acct, err := s.users.AccountByEmail(ctx, normEmail(email))
	if err != nil {
		return NewToken{}, err
	}
	if acct.Disabled {
		return NewToken{}, apperr.New(apperr.Conflict, "account_disabled", "the account %s is disabled; enable it first", acct.Email)
	}
	return s.CreateToken(WithUser(ctx, acct.User), name)
}
