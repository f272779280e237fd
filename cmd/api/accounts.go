package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/postgres/authdb"
	"github.com/toolgate/toolgate/internal/postgres/schema"
)

// DemoAdminEmail is the admin the offline demo creates on a fresh install.
const DemoAdminEmail = "demo@toolgate.local"

// newAuth returns sign-in on pool; with cache (nil: none) in front of its
// sessions.
func newAuth(cfg config.Config, pool *pgxpool.Pool, log *slog.Logger, cache *auth.CredentialCache) *auth.Service {
	a := cfg.Auth
	opts := auth.Options{Mode: auth.Mode(a.Mode), IdleTimeout: a.IdleTimeout, MaxAge: a.MaxAge,
		SignInLink: cfg.Offline() && cfg.OfflineDemo}
	if opts.Mode == auth.ModeOIDC {
		opts.OIDC = auth.NewOIDC(auth.OIDCConfig{Issuer: a.OIDCIssuer, ClientID: a.OIDCClientID, ClientSecret: a.OIDCClientSecret,
			RedirectURL: a.OIDCRedirectURL, AdminEmails: a.OIDCAdminEmails, AdminGroup: a.OIDCAdminGroup, GroupsClaim: a.OIDCGroupsClaim})
	}
	st := authdb.Stores(pool)
	if cache != nil {
		st = auth.WithCredentialCache(st, cache)
	}
	return auth.New(st, opts, log)
}

// prepareAccounts makes sure someone can sign in: the built-in admin of
// AUTH_MODE=none, the admin of TOOLGATE_ADMIN_EMAIL, the offline demo's
// admin and its sign-in link, or else a first-run setup link.
func prepareAccounts(ctx context.Context, cfg config.Config, authn *auth.Service, log *slog.Logger, stdout io.Writer) error {
	base := "http://" + browserHost(cfg.ListenAddr)
	say := func(level slog.Level, msg string) {
		fmt.Fprintln(stdout, msg)
		log.Log(ctx, level, msg)
	}
	// A link signs in whoever opens it: it goes to the terminal only, never
	// into the log (which is kept, shipped and read by others); the log
	// says that one was printed.
	sayLink := func(level slog.Level, msg, link, what string) {
		fmt.Fprintf(stdout, "%s %s\n", msg, link)
		log.Log(ctx, level, "printed a one-time "+what+" link to the terminal (not logged); run `toolgate link` for a new one")
	}
	switch authn.SignIn.Mode() {
	case auth.ModeNone:
		u, err := authn.SignIn.EnsureLocalUser(ctx)
		if err != nil {
			return fmt.Errorf("create the built-in admin of AUTH_MODE=none: %w", err)
		}
		say(slog.LevelWarn, fmt.Sprintf("toolgate: WARNING: AUTH_MODE=none: nobody signs in; anyone on this machine can approve tools as %s. Use AUTH_MODE=local unless this machine is yours alone.", u.Email))
		return nil
	}
	if cfg.Auth.AdminEmail != "" {
		u, created, err := authn.Accounts.EnsureAdmin(ctx, cfg.Auth.AdminEmail, cfg.Auth.AdminPassword)
		if err != nil {
			return fmt.Errorf("create the admin of TOOLGATE_ADMIN_EMAIL: %w", err)
		}
		if created {
			log.Info("created the admin of TOOLGATE_ADMIN_EMAIL", "email", u.Email)
		}
	}
	if authn.SignIn.Mode() != auth.ModeLocal {
		return nil
	}
	if cfg.Offline() && cfg.OfflineDemo {
		// The demo stays one click from the terminal to a working chat.
		if _, _, err := authn.Accounts.EnsureAdmin(ctx, DemoAdminEmail, ""); err != nil {
			return fmt.Errorf("create the demo admin: %w", err)
		}
		admin, err := authn.Accounts.OldestActiveAdmin(ctx)
		if err != nil {
			return fmt.Errorf("find the admin to sign in: %w", err)
		}
		tok, err := authn.SignIn.CreateLoginLink(ctx, admin.ID, time.Hour)
		if err != nil {
			return fmt.Errorf("create the sign-in link: %w", err)
		}
		sayLink(slog.LevelInfo, "toolgate: sign in:", fmt.Sprintf("%s/api/auth/link?token=%s", base, url.QueryEscape(tok)), "sign-in")
		fmt.Fprintln(stdout, "toolgate: (the link works once, for 1 hour; after signing out, ./bin/toolgate link prints a new one)")
		return nil
	}
	has, err := authn.Accounts.HasUsers(ctx)
	if err != nil || has {
		return err
	}
	tok, err := authn.SignIn.CreateSetupToken(ctx, 24*time.Hour)
	if err != nil {
		return fmt.Errorf("create the setup link: %w", err)
	}
	sayLink(slog.LevelWarn, "toolgate: first run: create the admin account at",
		fmt.Sprintf("%s/setup?token=%s", base, url.QueryEscape(tok)), "setup")
	return nil
}

// linkTTL is how long a sign-in link from `toolgate link` works.
const linkTTL = time.Hour

// printLink prints a new one-time sign-in link: `toolgate link [EMAIL]`.
// Without EMAIL it is for the oldest enabled admin (the offline demo's
// admin, or the first admin), or, before anyone has an account, a setup
// link. It runs on the server's machine: whoever has its DATABASE_URL can
// change every row anyway, so access to the database is the authority,
// as for `toolgate token create`. Only the link goes to stdout.
func printLink(ctx context.Context, cfg config.Config, log *slog.Logger, email string, stdout io.Writer) error {
	if auth.Mode(cfg.Auth.Mode) != auth.ModeLocal {
		return fmt.Errorf("sign-in links are for AUTH_MODE=local (AUTH_MODE is %s: with oidc people sign in at the identity provider, with none nobody signs in)", cfg.Auth.Mode)
	}
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, false, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := schema.Up(ctx, pool); err != nil {
		return err
	}
	authn := newAuth(cfg, pool, log, nil)
	base := cfg.Webhooks.PublicURL
	var u auth.User
	if email != "" {
		if u, err = authn.Accounts.ActiveUser(ctx, email); err != nil {
			return fmt.Errorf("a sign-in link for %s: %w", email, err)
		}
	} else {
		has, err := authn.Accounts.HasUsers(ctx)
		if err != nil {
			return err
		}
		if !has {
			tok, err := authn.SignIn.CreateSetupToken(ctx, 24*time.Hour)
			if err != nil {
				return fmt.Errorf("create the setup link: %w", err)
			}
			_, err = fmt.Fprintf(stdout, "%s/setup?token=%s\n", base, url.QueryEscape(tok))
			return err
		}
		if u, err = authn.Accounts.OldestActiveAdmin(ctx); err != nil {
			return fmt.Errorf("find the admin to sign in: %w", err)
		}
	}
	tok, err := authn.SignIn.CreateLoginLink(ctx, u.ID, linkTTL)
	if err != nil {
		return fmt.Errorf("create the sign-in link: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "%s/api/auth/link?token=%s\n", base, url.QueryEscape(tok))
	return err
}

// browserHost is LISTEN_ADDR as a browser on this machine reaches it.
func browserHost(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// issueToken prints a new personal API token for the account with email:
// `toolgate token create EMAIL [NAME]`, for scripts and the curl
// walk-through in docs/api.md ("Chat over curl") without a browser.
func issueToken(ctx context.Context, cfg config.Config, log *slog.Logger, email, name string, stdout io.Writer) error {
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, false, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := schema.Up(ctx, pool); err != nil {
		return err
	}
	tok, err := newAuth(cfg, pool, log, nil).APITokens.IssueToken(ctx, email, name)
	if err != nil {
		return fmt.Errorf("create a token for %s: %w", email, err)
	}
	fmt.Fprintln(stdout, tok.Secret)
	return nil
}
