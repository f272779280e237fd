package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/testdb"
)

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, c *http.Client, url string, cookie *http.Cookie) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if cookie != nil {
		req.AddCookie(cookie)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func sessionOf(res *http.Response) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == "toolgate_session" {
			return c
		}
	}
	return nil
}

// TestRun_FirstRunPrintsASetupLinkThatWorksOnce: with no account, the
// server prints a one-time setup link on the terminal (not in the log); it creates the first admin
// once, then is refused.
func TestRun_FirstRunPrintsASetupLinkThatWorksOnce(t *testing.T) {
	env := map[string]string{"DATABASE_URL": testdb.MissingURL(t), "AUTH_MODE": "local", "OFFLINE_DEMO": "false"}
	base, logs, _ := start(t, env)
	m := regexp.MustCompile(`toolgate: first run: create the admin account at (http://[^/]+)/setup\?token=([A-Za-z0-9_-]+)`).FindAllStringSubmatch(logs.String(), -1)
	if len(m) != 1 || m[0][1] != base { // on stdout, never in the log
		t.Fatalf("setup link printed %d times (want once, on the terminal, not in the log) for %s:\n%s", len(m), base, logs)
	}
	if _, body := get(t, http.DefaultClient, base+"/api/auth/status", nil); !strings.Contains(body, `"setup_required":true`) {
		t.Errorf("status before setup: %s", body)
	}
	body := `{"token":"` + m[0][2] + `","email":"owner@example.com","password":"a long passphrase"}`
	if st, b := do(t, "POST", base+"/api/auth/setup", body); st != 201 || !strings.Contains(b, `"role":"admin"`) {
		t.Fatalf("setup: %d %s", st, b)
	}
	if st, b := do(t, "POST", base+"/api/auth/setup", strings.Replace(body, "owner@", "other@", 1)); st != 401 || !strings.Contains(b, "invalid_setup_token") {
		t.Errorf("second use of the setup token: %d %s", st, b)
	}
	if _, body := get(t, http.DefaultClient, base+"/api/auth/status", nil); !strings.Contains(body, `"setup_required":false`) {
		t.Errorf("status after setup: %s", body)
	}
}

// TestRun_OfflineDemoPrintsAOneClickSignInLink: make run with no key keeps
// one click from the terminal to a signed-in chat, and the link works once.
func TestRun_OfflineDemoPrintsAOneClickSignInLink(t *testing.T) {
	env := map[string]string{"DATABASE_URL": testdb.MissingURL(t), "AUTH_MODE": "local"}
	base, logs, _ := start(t, env)
	m := regexp.MustCompile(`toolgate: sign in: (http://[^ \n"]+)`).FindStringSubmatch(logs.String())
	if m == nil || !strings.HasPrefix(m[1], base+"/api/auth/link?token=") {
		t.Fatalf("no sign-in link in:\n%s", logs)
	}
	res, _ := get(t, noRedirect, m[1], nil)
	c := sessionOf(res)
	if res.StatusCode != 303 || res.Header.Get("Location") != "/" || c == nil {
		t.Fatalf("link: %d %v", res.StatusCode, res.Header)
	}
	if _, me := get(t, http.DefaultClient, base+"/api/auth/me", c); !strings.Contains(me, `"email":"demo@toolgate.local"`) || !strings.Contains(me, `"role":"admin"`) {
		t.Errorf("signed in as %s", me)
	}
	if res, _ := get(t, noRedirect, m[1], nil); res.StatusCode != 401 || sessionOf(res) != nil {
		t.Errorf("second use of the link: %d", res.StatusCode)
	}
}

func TestRun_AuthModeNoneNeedsLoopback(t *testing.T) {
	env := map[string]string{"LISTEN_ADDR": "0.0.0.0:8080", "AUTH_MODE": "none"}
	err := run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "AUTH_MODE=none") || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("run accepted AUTH_MODE=none on 0.0.0.0: %v", err)
	}
	env = map[string]string{"TOOLGATE_ADMIN_EMAIL": "a@example.com"}
	if err := run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard); err == nil || !strings.Contains(err.Error(), "TOOLGATE_ADMIN_PASSWORD") {
		t.Errorf("an admin email without password: %v", err)
	}
}

// TestRun_AuthModeNoneWarnsLoudly: every request is the built-in admin, and
// the terminal says anyone on this machine can approve tools.
func TestRun_AuthModeNoneWarnsLoudly(t *testing.T) {
	env := map[string]string{"DATABASE_URL": testdb.MissingURL(t), "AUTH_MODE": "none"}
	base, logs, _ := start(t, env)
	if !strings.Contains(logs.String(), "anyone on this machine can approve tools") || !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("no loud warning:\n%s", logs)
	}
	if _, me := get(t, http.DefaultClient, base+"/api/auth/me", nil); !strings.Contains(me, "local@localhost") {
		t.Errorf("me in none mode: %s", me)
	}
}

// preAccountRows are rows as an install from before accounts left them: a
// conversation without owner, an audit entry and a workspace policy without
// an account.
type preAccountRows struct {
	conv, server string
	audit        int64
}

func seedPreAccountRows(t *testing.T, pool *pgxpool.Pool, tag string) preAccountRows {
	t.Helper()
	ctx := context.Background()
	r := preAccountRows{conv: "conv_" + tag, server: "srv_" + tag}
	for _, q := range []string{
		`INSERT INTO conversations (id, title) VALUES ('` + r.conv + `', 'from before accounts')`,
		`INSERT INTO mcp_servers (label, url) VALUES ('` + r.server + `', 'http://127.0.0.1:1/mcp')`,
		`INSERT INTO tool_policies (server_label, tool_name, policy, updated_by) VALUES ('` + r.server + `', 'delete_forecast', 'always', 'local')`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := pool.QueryRow(ctx, `INSERT INTO audit_log (actor, action, server_label) VALUES ('local', 'policy.set', $1) RETURNING id`,
		r.server).Scan(&r.audit); err != nil {
		t.Fatal(err)
	}
	return r
}

// owners reads who the rows belong to now ("" for nobody): the
// conversation's owner, the audit entry's actor account and actor, the
// policy's author.
func (r preAccountRows) owners(t *testing.T, pool *pgxpool.Pool) [4]string {
	t.Helper()
	var o [4]string
	err := pool.QueryRow(context.Background(), `SELECT
		coalesce((SELECT owner_id FROM conversations WHERE id = $1), ''),
		coalesce((SELECT actor_id FROM audit_log WHERE id = $2), ''),
		(SELECT actor FROM audit_log WHERE id = $2),
		coalesce((SELECT updated_by_id FROM tool_policies WHERE server_label = $3), '')`, r.conv, r.audit, r.server).
		Scan(&o[0], &o[1], &o[2], &o[3])
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestAccounts_FirstAdminAdoptsTheRowsFromBeforeAccounts: however the first
// admin comes to be (setup link, TOOLGATE_ADMIN_*, the offline demo, an
// OIDC sign-in, or an OIDC member the provider makes admin later), the
// ownerless conversations, audit entries and workspace policies become
// theirs in the transaction that makes them admin; an admin made later
// takes nothing over.
func TestAccounts_FirstAdminAdoptsTheRowsFromBeforeAccounts(t *testing.T) {
	oidcID := func(sub string, admin bool) auth.Identity {
		return auth.Identity{Issuer: "https://idp.example.com", Subject: sub, Email: sub + "@example.com", Admin: admin}
	}
	client := auth.Client{Addr: "127.0.0.1"}
	for _, tc := range []struct {
		name string
		cfg  config.Config
		// first makes the first admin and returns it; before it does, a
		// member may sign in (and must not adopt anything).
		first func(t *testing.T, authn *auth.Service, stdout string, r preAccountRows, pool *pgxpool.Pool) auth.User
		// second makes another admin later.
		second func(t *testing.T, authn *auth.Service, first auth.User) auth.User
	}{
		{
			name: "setup link",
			cfg:  config.Config{ListenAddr: "127.0.0.1:8080", OpenAIAPIKey: "sk-test", Auth: config.Auth{Mode: "local"}},
			first: func(t *testing.T, authn *auth.Service, stdout string, _ preAccountRows, _ *pgxpool.Pool) auth.User {
				m := regexp.MustCompile(`setup\?token=([A-Za-z0-9_-]+)`).FindStringSubmatch(stdout)
				if m == nil {
					t.Fatalf("no setup link in %q", stdout)
				}
				ns, err := authn.SignIn.Setup(context.Background(), m[1], "owner@example.com", "a long passphrase", client)
				if err != nil {
					t.Fatal(err)
				}
				return ns.User
			},
		},
		{
			name: "TOOLGATE_ADMIN_EMAIL",
			cfg: config.Config{ListenAddr: "127.0.0.1:8080", OpenAIAPIKey: "sk-test",
				Auth: config.Auth{Mode: "local", AdminEmail: "ops@example.com", AdminPassword: "a long passphrase"}},
			first: func(t *testing.T, authn *auth.Service, _ string, _ preAccountRows, _ *pgxpool.Pool) auth.User {
				return oldestAdmin(t, authn, "ops@example.com")
			},
		},
		{
			name: "offline demo",
			cfg:  config.Config{ListenAddr: "127.0.0.1:8080", OfflineDemo: true, Auth: config.Auth{Mode: "local"}},
			first: func(t *testing.T, authn *auth.Service, _ string, _ preAccountRows, _ *pgxpool.Pool) auth.User {
				return oldestAdmin(t, authn, DemoAdminEmail)
			},
		},
		{
			name: "OIDC first sign-in",
			cfg:  config.Config{ListenAddr: "127.0.0.1:8080", OpenAIAPIKey: "sk-test", Auth: config.Auth{Mode: "oidc", OIDCIssuer: "https://idp.example.com"}},
			first: func(t *testing.T, authn *auth.Service, _ string, _ preAccountRows, _ *pgxpool.Pool) auth.User {
				ns, err := authn.SignIn.OIDCLogin(context.Background(), oidcID("boss", true), client)
				if err != nil {
					t.Fatal(err)
				}
				return ns.User
			},
			second: func(t *testing.T, authn *auth.Service, _ auth.User) auth.User {
				ns, err := authn.SignIn.OIDCLogin(context.Background(), oidcID("deputy", true), client)
				if err != nil {
					t.Fatal(err)
				}
				return ns.User
			},
		},
		{
			name: "OIDC member the provider makes admin later",
			cfg:  config.Config{ListenAddr: "127.0.0.1:8080", OpenAIAPIKey: "sk-test", Auth: config.Auth{Mode: "oidc", OIDCIssuer: "https://idp.example.com"}},
			first: func(t *testing.T, authn *auth.Service, _ string, r preAccountRows, pool *pgxpool.Pool) auth.User {
				if _, err := authn.SignIn.OIDCLogin(context.Background(), oidcID("boss", false), client); err != nil {
					t.Fatal(err)
				}
				if got := r.owners(t, pool); got != [4]string{"", "", "local", ""} {
					t.Errorf("a member adopted the rows from before accounts: %v", got)
				}
				ns, err := authn.SignIn.OIDCLogin(context.Background(), oidcID("boss", true), client)
				if err != nil {
					t.Fatal(err)
				}
				return ns.User
			},
			second: func(t *testing.T, authn *auth.Service, _ auth.User) auth.User {
				ctx := context.Background()
				if _, err := authn.SignIn.OIDCLogin(ctx, oidcID("deputy", false), client); err != nil {
					t.Fatal(err)
				}
				ns, err := authn.SignIn.OIDCLogin(ctx, oidcID("deputy", true), client)
				if err != nil {
					t.Fatal(err)
				}
				return ns.User
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := testdb.New(t)
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			before := seedPreAccountRows(t, pool, "old")
			authn := newAuth(tc.cfg, pool, log, nil)
			var stdout bytes.Buffer
			if err := prepareAccounts(context.Background(), tc.cfg, authn, log, &stdout); err != nil {
				t.Fatal(err)
			}
			first := tc.first(t, authn, stdout.String(), before, pool)
			if first.Role != auth.Admin {
				t.Fatalf("first admin %+v", first)
			}
			if got, want := before.owners(t, pool), [4]string{first.ID, first.ID, first.Email, first.ID}; got != want {
				t.Errorf("rows from before accounts belong to %v, want the first admin %v", got, want)
			}

			// Ownerless rows left over (they cannot be made since) stay
			// ownerless: only the first admin ever adopts.
			leftover := seedPreAccountRows(t, pool, "later")
			second := auth.User{}
			if tc.second != nil {
				second = tc.second(t, authn, first)
			} else {
				var err error
				second, err = authn.Accounts.CreateUser(auth.WithUser(context.Background(), first),
					auth.NewUser{Email: "deputy@example.com", Password: "a long passphrase", Role: auth.Admin})
				if err != nil {
					t.Fatal(err)
				}
			}
			if second.Role != auth.Admin || second.ID == first.ID {
				t.Fatalf("second admin %+v", second)
			}
			if got, want := before.owners(t, pool), [4]string{first.ID, first.ID, first.Email, first.ID}; got != want {
				t.Errorf("after a second admin the rows belong to %v, want the first admin %v", got, want)
			}
			if got := leftover.owners(t, pool); got != [4]string{"", "", "local", ""} {
				t.Errorf("the second admin took over ownerless rows: %v", got)
			}
		})
	}
}

func oldestAdmin(t *testing.T, authn *auth.Service, email string) auth.User {
	t.Helper()
	u, err := authn.Accounts.OldestActiveAdmin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if u.Email != email {
		t.Fatalf("the admin is %s, want %s", u.Email, email)
	}
	return u
}

// TestRun_UsedSignInLinkShowsAPageAndToolgateLinkLetsTheDemoAdminBackIn:
// the offline demo's link is printed on the terminal and not in the log
// (LOG_FORMAT=json: no log record holds it); once used, a browser opening
// it again gets an HTML page that says what to do (toolgate link), an API
// client the JSON error; after signing out, `toolgate link` prints a new
// link that signs the demo admin in, without a restart.
func TestRun_UsedSignInLinkShowsAPageAndToolgateLinkLetsTheDemoAdminBackIn(t *testing.T) {
	env := map[string]string{"DATABASE_URL": testdb.MissingURL(t), "AUTH_MODE": "local", "LOG_FORMAT": "json"}
	base, logs, _ := start(t, env)
	m := regexp.MustCompile(`toolgate: sign in: (http://\S+/api/auth/link\?token=([A-Za-z0-9_-]+))`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no sign-in link on the terminal:\n%s", logs)
	}
	link, tok := m[1], m[2]
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.HasPrefix(l, "{") && strings.Contains(l, tok) {
			t.Errorf("a log record holds the sign-in link: %s", l)
		}
	}
	if !strings.Contains(logs.String(), "printed a one-time sign-in link to the terminal") {
		t.Errorf("the log does not say a link was printed:\n%s", logs)
	}

	res, _ := get(t, noRedirect, link, nil)
	c := sessionOf(res)
	if res.StatusCode != 303 || c == nil {
		t.Fatalf("first use of the link: %d", res.StatusCode)
	}
	req, _ := http.NewRequest("POST", base+"/api/auth/logout", nil)
	req.AddCookie(c)
	req.Header.Set("Origin", base)
	if out, err := http.DefaultClient.Do(req); err != nil || out.StatusCode >= 300 {
		t.Fatalf("sign out: %v %v", out, err)
	}

	// The browser opens the used link again: a page, not JSON.
	req, _ = http.NewRequest("GET", link, nil)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	page, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != 401 || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") || sessionOf(page) != nil {
		t.Errorf("used link in a browser: %d %s", page.StatusCode, page.Header.Get("Content-Type"))
	}
	for _, want := range []string{"<h1>This sign-in link does not work any more</h1>", "<code>toolgate link</code>", "for the demo admin", `<a href="/">`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the page does not say %q:\n%s", want, body)
		}
	}
	// An API client keeps the JSON error.
	if res, b := get(t, noRedirect, link, nil); res.StatusCode != 401 || !strings.Contains(b, `"code":"invalid_link"`) || !strings.Contains(b, "toolgate link") {
		t.Errorf("used link for an API client: %d %s", res.StatusCode, b)
	}

	// toolgate link at the terminal: a new link, only the link on stdout.
	var out bytes.Buffer
	if err := run(context.Background(), []string{"link"}, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatalf("toolgate link: %v", err)
	}
	fresh := strings.TrimSpace(out.String())
	if !strings.HasPrefix(fresh, base+"/api/auth/link?token=") || strings.Contains(fresh, "\n") || fresh == link {
		t.Fatalf("toolgate link printed %q", out.String())
	}
	res, _ = get(t, noRedirect, fresh, nil)
	if c = sessionOf(res); res.StatusCode != 303 || c == nil {
		t.Fatalf("the new link: %d", res.StatusCode)
	}
	if _, me := get(t, http.DefaultClient, base+"/api/auth/me", c); !strings.Contains(me, `"email":"demo@toolgate.local"`) {
		t.Errorf("the new link signed in as %s", me)
	}
	// For a named account; an unknown one is an error.
	out.Reset()
	if err := run(context.Background(), []string{"link", "nobody@example.com"}, func(k string) string { return env[k] }, &out); err == nil || out.Len() != 0 {
		t.Errorf("toolgate link for an unknown account: %v, printed %q", err, out.String())
	}
	if err := run(context.Background(), []string{"link", "a", "b"}, func(k string) string { return env[k] }, &out); !errors.As(err, new(usageError)) {
		t.Errorf("toolgate link a b: %v", err)
	}
}
