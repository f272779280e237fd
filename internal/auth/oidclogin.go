package auth

import (
	"context"

	"github.com/toolgate/toolgate/internal/apperr"
)

// OIDCLogin links or creates the account of an OIDC identity, sets its role
// (re-evaluated at every sign-in) and signs it in.
func (s *SignIn) OIDCLogin(ctx context.Context, id Identity, c Client) (NewSession, error) {
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
