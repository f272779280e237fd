package config

import (
	"fmt"
	"log/slog"
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Auth is how people sign in.
type Auth struct {
	Mode          string        // AUTH_MODE: local (default), oidc, or none (loopback LISTEN_ADDR only)
	AdminEmail    string        // TOOLGATE_ADMIN_EMAIL: with the password, the admin created at start when there is no user
	AdminPassword string        // TOOLGATE_ADMIN_PASSWORD
	IdleTimeout   time.Duration // SESSION_IDLE_TIMEOUT: a session unused this long ends
	MaxAge        time.Duration // SESSION_MAX_AGE: a session ends this long after sign-in
	// CacheTTL (AUTH_CACHE_TTL) is how long a replica may serve a session
	// or a personal API token it has read from memory
	// (auth.CredentialCache; 0: never).
	CacheTTL   time.Duration
	TrustProxy bool // TRUST_PROXY_HEADERS: believe X-Forwarded-For and X-Forwarded-Proto

	OIDCIssuer       string   // OIDC_ISSUER
	OIDCClientID     string   // OIDC_CLIENT_ID
	OIDCClientSecret string   // OIDC_CLIENT_SECRET
	OIDCRedirectURL  string   // OIDC_REDIRECT_URL (default http://LISTEN_ADDR/api/auth/oidc/callback)
	OIDCAdminEmails  []string // OIDC_ADMIN_EMAILS: comma list of admins' emails
	OIDCAdminGroup   string   // OIDC_ADMIN_GROUP: members of this group are admins
	OIDCGroupsClaim  string   // OIDC_GROUPS_CLAIM: the claim listing groups (default groups)
}

func loadAuth(get func(string, string) string, listenAddr string, errs *[]string) Auth {
	a := Auth{
		Mode:             get("AUTH_MODE", "local"),
		AdminEmail:       get("TOOLGATE_ADMIN_EMAIL", ""),
		AdminPassword:    get("TOOLGATE_ADMIN_PASSWORD", ""),
		OIDCIssuer:       get("OIDC_ISSUER", ""),
		OIDCClientID:     get("OIDC_CLIENT_ID", ""),
		OIDCClientSecret: get("OIDC_CLIENT_SECRET", ""),
		OIDCRedirectURL:  get("OIDC_REDIRECT_URL", "http://"+listenAddr+"/api/auth/oidc/callback"),
		OIDCAdminGroup:   get("OIDC_ADMIN_GROUP", ""),
		OIDCGroupsClaim:  get("OIDC_GROUPS_CLAIM", "groups"),
	}
	fail := func(format string, args ...any) { *errs = append(*errs, fmt.Sprintf(format, args...)) }
	a.checkMode(listenAddr, fail)
	a.checkAdmin(fail)
	a.loadSessions(get, errs, fail)
	for _, e := range strings.Split(get("OIDC_ADMIN_EMAILS", ""), ",") {
		if e = strings.TrimSpace(e); e != "" {
			a.OIDCAdminEmails = append(a.OIDCAdminEmails, strings.ToLower(e))
		}
	}
	if a.Mode == "oidc" {
		a.checkOIDC(fail)
	}
	return a
}

// checkMode checks AUTH_MODE, and that none listens on loopback only.
func (a *Auth) checkMode(listenAddr string, fail func(string, ...any)) {
	switch a.Mode {
	case "local", "oidc":
	case "none":
		if host, _, err := net.SplitHostPort(listenAddr); err == nil && !loopback(host) {
			fail("AUTH_MODE=none lets anyone who reaches the port approve tools, so it needs a loopback LISTEN_ADDR such as 127.0.0.1:8080 (got %q); use AUTH_MODE=local", listenAddr)
		}
	default:
		fail("AUTH_MODE must be local, oidc or none (got %q)", a.Mode)
	}
}

// checkAdmin checks TOOLGATE_ADMIN_EMAIL and TOOLGATE_ADMIN_PASSWORD.
func (a *Auth) checkAdmin(fail func(string, ...any)) {
	if (a.AdminEmail == "") != (a.AdminPassword == "") {
		fail("TOOLGATE_ADMIN_EMAIL and TOOLGATE_ADMIN_PASSWORD go together: set both or neither")
	}
	if a.AdminEmail != "" {
		if m, err := mail.ParseAddress(a.AdminEmail); err != nil || m.Address != a.AdminEmail {
			fail("TOOLGATE_ADMIN_EMAIL must be a plain email address such as admin@example.com")
		}
		if n := len([]rune(a.AdminPassword)); n < 8 || len(a.AdminPassword) > 1024 {
			fail("TOOLGATE_ADMIN_PASSWORD must be 8 to 1024 characters long")
		}
	}
}

// loadSessions reads the session lifetimes and TRUST_PROXY_HEADERS.
func (a *Auth) loadSessions(get func(string, string) string, errs *[]string, fail func(string, ...any)) {
	a.IdleTimeout = duration(get, "SESSION_IDLE_TIMEOUT", "12h", errs)
	a.MaxAge = duration(get, "SESSION_MAX_AGE", "168h", errs)
	if raw := get("AUTH_CACHE_TTL", "10s"); raw == "0" {
		a.CacheTTL = 0
	} else if a.CacheTTL = duration(get, "AUTH_CACHE_TTL", "10s", errs); a.CacheTTL > time.Minute {
		fail("AUTH_CACHE_TTL (%s) must be at most 1m (or 0: off): it bounds how long a replica whose notification listener hangs unnoticed could still serve a revoked session", a.CacheTTL)
	}
	if a.IdleTimeout > 0 && a.MaxAge > 0 && a.IdleTimeout > a.MaxAge {
		fail("SESSION_IDLE_TIMEOUT (%s) must not be longer than SESSION_MAX_AGE (%s)", a.IdleTimeout, a.MaxAge)
	}
	var err error
	if a.TrustProxy, err = strconv.ParseBool(get("TRUST_PROXY_HEADERS", "false")); err != nil {
		fail("TRUST_PROXY_HEADERS must be true or false (got %q)", get("TRUST_PROXY_HEADERS", ""))
	}
}

// checkOIDC checks what AUTH_MODE=oidc needs.
func (a *Auth) checkOIDC(fail func(string, ...any)) {
	if u, err := url.Parse(a.OIDCIssuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		fail("AUTH_MODE=oidc needs OIDC_ISSUER, the provider's issuer URL such as https://accounts.example.com (got %q)", a.OIDCIssuer)
	}
	if a.OIDCClientID == "" {
		fail("AUTH_MODE=oidc needs OIDC_CLIENT_ID, the client registered for Toolgate at the provider")
	}
	if u, err := url.Parse(a.OIDCRedirectURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		fail("OIDC_REDIRECT_URL must be an http(s) URL ending in /api/auth/oidc/callback (got %q)", a.OIDCRedirectURL)
	}
	// The role is the provider's answer at every sign-in: without either
	// setting nobody would ever be an admin.
	if len(a.OIDCAdminEmails) == 0 && a.OIDCAdminGroup == "" {
		fail("AUTH_MODE=oidc needs OIDC_ADMIN_EMAILS (comma-separated emails) or OIDC_ADMIN_GROUP (a group in the %s claim): admins are chosen by these at every sign-in", a.OIDCGroupsClaim)
	}
}

// loopback reports whether host (of LISTEN_ADDR) only takes connections
// from this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LogValue shows the sign-in settings with secrets masked.
func (a Auth) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("mode", a.Mode),
		slog.String("admin_email", a.AdminEmail),
		slog.String("admin_password", maskSecret(a.AdminPassword)),
		slog.Duration("session_idle_timeout", a.IdleTimeout),
		slog.Duration("session_max_age", a.MaxAge),
		slog.Duration("session_cache_ttl", a.CacheTTL),
		slog.Bool("trust_proxy_headers", a.TrustProxy),
		slog.String("oidc_issuer", a.OIDCIssuer),
		slog.String("oidc_client_id", a.OIDCClientID),
		slog.String("oidc_client_secret", maskSecret(a.OIDCClientSecret)),
		slog.String("oidc_redirect_url", a.OIDCRedirectURL),
		slog.String("oidc_admin_emails", strings.Join(a.OIDCAdminEmails, ",")),
		slog.String("oidc_admin_group", a.OIDCAdminGroup),
		slog.String("oidc_groups_claim", a.OIDCGroupsClaim),
	)
}

func maskSecret(s string) string {
	if s == "" {
		return "(unset)"
	}
	return "****"
}
