package auth

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/toolgate/toolgate/internal/apperr"
)

// OIDCConfig is the OpenID Connect provider Toolgate signs people in with.
type OIDCConfig struct {
	Issuer       string   // OIDC_ISSUER
	ClientID     string   // OIDC_CLIENT_ID
	ClientSecret string   // OIDC_CLIENT_SECRET
	RedirectURL  string   // OIDC_REDIRECT_URL: .../api/auth/oidc/callback
	AdminEmails  []string // OIDC_ADMIN_EMAILS: these emails are admins
	AdminGroup   string   // OIDC_ADMIN_GROUP: members of this group are admins
	GroupsClaim  string   // OIDC_GROUPS_CLAIM: the ID token claim listing groups
}

// OIDC signs people in with authorization code + PKCE, state and nonce. The
// provider's discovery document is read at the first sign-in (and again
// after a failure), so Toolgate starts while the provider is down.
type OIDC struct {
	cfg OIDCConfig

	mu       sync.Mutex
	oauth    *oauth2.Config
	verifier *oidc.IDTokenVerifier
	provider *oidc.Provider
}

// NewOIDC returns the sign-in flow for cfg.
func NewOIDC(cfg OIDCConfig) *OIDC {
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	return &OIDC{cfg: cfg}
}

func (o *OIDC) discover(ctx context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.oauth != nil {
		return o.oauth, o.verifier, nil
	}
	p, err := oidc.NewProvider(ctx, o.cfg.Issuer)
	if err != nil {
		return nil, nil, apperr.Wrap(err, apperr.Unavailable, "oidc_unavailable",
			"the sign-in provider at OIDC_ISSUER=%s does not answer; try again shortly", o.cfg.Issuer)
	}
	o.oauth = &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, RedirectURL: o.cfg.RedirectURL,
		Endpoint: p.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
	o.verifier = p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID})
	o.provider = p
	return o.oauth, o.verifier, nil
}

// OIDCFlow is what one sign-in keeps between leaving for the provider and
// coming back: it lives in a short-lived HttpOnly cookie.
type OIDCFlow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
}

// Begin starts a sign-in: the provider URL to send the browser to, and the
// flow to keep.
func (o *OIDC) Begin(ctx context.Context) (string, OIDCFlow, error) {
	oc, _, err := o.discover(ctx)
	if err != nil {
		return "", OIDCFlow{}, err
	}
	state, _ := NewSecret("")
	nonce, _ := NewSecret("")
	f := OIDCFlow{State: state, Nonce: nonce, Verifier: oauth2.GenerateVerifier()}
	return oc.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), f, nil
}

// Finish exchanges the code the provider sent back, verifies the ID token
// (signature, issuer, audience, expiry, nonce) and returns who signed in.
func (o *OIDC) Finish(ctx context.Context, f OIDCFlow, state, code string) (Identity, error) {
	fail := func(err error, format string, args ...any) (Identity, error) {
		return Identity{}, apperr.Wrap(err, apperr.Unauthenticated, "oidc_failed", format, args...)
	}
	if f.State == "" || state != f.State {
		return fail(nil, "the sign-in could not be matched to this browser (state); start again from the sign-in page")
	}
	oc, verifier, err := o.discover(ctx)
	if err != nil {
		return Identity{}, err
	}
	tok, err := oc.Exchange(ctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return fail(err, "the sign-in provider refused the code; start again from the sign-in page")
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok {
		return fail(nil, "the sign-in provider sent no ID token")
	}
	idt, err := verifier.Verify(ctx, raw)
	if err != nil {
		return fail(err, "the ID token from the sign-in provider is not valid")
	}
	if idt.Nonce != f.Nonce {
		return fail(nil, "the ID token was not issued for this sign-in (nonce); start again")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return fail(err, "the ID token's claims could not be read")
	}
	email, _ := claims["email"].(string)
	if email == "" {
		// Many providers put the email only in the userinfo answer.
		info, err := o.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			return fail(err, "the sign-in provider's userinfo endpoint failed")
		}
		if info.Subject != idt.Subject {
			return fail(nil, "the userinfo answer is about another subject than the ID token")
		}
		var more map[string]any
		if err := info.Claims(&more); err != nil {
			return fail(err, "the userinfo claims could not be read")
		}
		for k, v := range more {
			if _, ok := claims[k]; !ok {
				claims[k] = v
			}
		}
		email, _ = claims["email"].(string)
	}
	if email == "" {
		return fail(nil, "the sign-in provider sent no email; allow the email scope for client %s", o.cfg.ClientID)
	}
	if v, ok := claims["email_verified"].(bool); ok && !v {
		return fail(nil, "the sign-in provider says the email %s is not verified", email)
	}
	// Only an email the provider says it verified names a person: some
	// providers let anyone type any address and send no email_verified.
	verified := claims["email_verified"] == true || claims["email_verified"] == "true"
	return Identity{Issuer: idt.Issuer, Subject: idt.Subject, Email: email, EmailVerified: verified,
		Admin: o.isAdmin(email, verified, claims)}, nil
}

func (o *OIDC) isAdmin(email string, verified bool, claims map[string]any) bool {
	if verified && slices.ContainsFunc(o.cfg.AdminEmails, func(a string) bool { return strings.EqualFold(a, email) }) {
		return true
	}
	if o.cfg.AdminGroup == "" {
		return false
	}
	switch g := claims[o.cfg.GroupsClaim].(type) {
	case []any:
		for _, v := range g {
			if fmt.Sprint(v) == o.cfg.AdminGroup {
				return true
			}
		}
	case string:
		return g == o.cfg.AdminGroup
	}
	return false
}
