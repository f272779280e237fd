package http_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	zoidc "github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/toolgate/toolgate/internal/auth"
	toolhttp "github.com/toolgate/toolgate/internal/http"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/postgres/authdb"
	"github.com/toolgate/toolgate/internal/testdb"
)

// groupsStorage is the example provider's storage with a groups claim per
// subject (the example has none), sent in the ID token and by userinfo as
// a real provider would.
type groupsStorage struct {
	*storage.Storage
	mu     sync.Mutex
	groups map[string][]any
	// unverified: subjects whose email the provider does not say it
	// verified (no email_verified claim, as some providers send).
	unverified map[string]bool
}

func (s *groupsStorage) setGroups(subject string, groups ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[subject] = groups
}

func (s *groupsStorage) addGroups(info *zoidc.UserInfo, subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.groups[subject]; ok {
		info.AppendClaims("groups", g)
	}
	if s.unverified[subject] {
		info.EmailVerified = false // omitted from the claims
	}
}

func (s *groupsStorage) SetUserinfoFromRequest(ctx context.Context, info *zoidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	s.addGroups(info, req.GetSubject())
	return nil
}

func (s *groupsStorage) SetUserinfoFromToken(ctx context.Context, info *zoidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, info, tokenID, subject, origin); err != nil {
		return err
	}
	s.addGroups(info, info.Subject)
	return nil
}

// oidcEnv is zitadel/oidc's example OpenID Provider run in-process, and the
// API signing people in through it. configure "restarts" the API with other
// OIDC settings on the same address and database.
type oidcEnv struct {
	t       *testing.T
	pool    *pgxpool.Pool
	log     *slog.Logger
	issuer  string
	apiURL  string
	host    string // the provider's host: the admin user's name is test-user@host
	users   *groupsStorage
	handler atomic.Pointer[http.Handler]
	auth    *auth.Service
}

func newOIDCEnv(t *testing.T) *oidcEnv {
	e := &oidcEnv{t: t, pool: testdb.New(t), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	api := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*e.handler.Load()).ServeHTTP(w, r)
	}))
	e.apiURL = "http://" + api.Listener.Addr().String()
	specWatch(t, e.apiURL) // every answer of the API is checked against docs/openapi.yaml
	provider := httptest.NewUnstartedServer(nil)
	e.issuer = "http://" + provider.Listener.Addr().String()
	e.host = strings.Split(strings.TrimPrefix(e.issuer, "http://"), ":")[0]
	e.users = &groupsStorage{groups: map[string][]any{}, unverified: map[string]bool{}, Storage: storage.NewStorageWithClients(storage.NewUserStore(e.issuer),
		map[string]*storage.Client{"toolgate": storage.WebClient("toolgate", "toolgate-secret", e.apiURL+"/api/auth/oidc/callback")})}
	provider.Config.Handler = exampleop.SetupServer(e.issuer, e.users, nil, false)
	provider.Start()
	t.Cleanup(provider.Close)
	e.configure(auth.OIDCConfig{})
	api.Start()
	t.Cleanup(api.Close)
	return e
}

// configure serves the API with admins by emails and group (OIDC_ADMIN_EMAILS,
// OIDC_ADMIN_GROUP), as a restart with those settings would.
func (e *oidcEnv) configure(admins auth.OIDCConfig) {
	cfg := admins
	cfg.Issuer, cfg.ClientID, cfg.ClientSecret = e.issuer, "toolgate", "toolgate-secret"
	cfg.RedirectURL = e.apiURL + "/api/auth/oidc/callback"
	e.auth = auth.New(authdb.Stores(e.pool), auth.Options{Mode: auth.ModeOIDC, OIDC: auth.NewOIDC(cfg)}, e.log)
	store := postgres.NewStore(e.pool)
	var h http.Handler = toolhttp.NewServer(e.log, policysvc.New(store, &mcpclient.Discoverer{}, e.log, policy.Options{}), nil, e.auth, store,
		toolhttp.Options{MaxBodyBytes: 1 << 20})
	e.handler.Store(&h)
}

// signIn signs username in with a new browser, as a person would: our login
// redirects to the provider, its form is posted, the provider sends the
// code back. It returns the browser and the callback's answer.
func (e *oidcEnv) signIn(username string) (*http.Client, int, string) {
	e.t.Helper()
	jar, _ := cookiejar.New(nil)
	// The browser stops at the callback's redirect to the web app.
	browser := &http.Client{Jar: jar, Transport: specTransport{}, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if r.URL.String() == e.apiURL+"/" {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	res, err := browser.Get(e.apiURL + "/api/auth/oidc/login")
	if err != nil {
		e.t.Fatal(err)
	}
	form, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="id" value="([^"]+)"`).FindSubmatch(form)
	if res.StatusCode != 200 || m == nil || !strings.HasPrefix(res.Request.URL.String(), e.issuer+"/login/") {
		e.t.Fatalf("no login form from the provider: %d %s\n%s", res.StatusCode, res.Request.URL, form)
	}
	res, err = browser.PostForm(e.issuer+"/login/username", url.Values{"id": {string(m[1])},
		"username": {username}, "password": {"verysecure"}})
	if err != nil {
		e.t.Fatal(err)
	}
	back, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.Request.URL.Path != "/api/auth/oidc/callback" {
		e.t.Fatalf("the provider did not send the browser back: %s %d %s", res.Request.URL, res.StatusCode, back)
	}
	return browser, res.StatusCode, string(back)
}

// mustSignIn signs username in and returns the browser and GET /api/auth/me.
func (e *oidcEnv) mustSignIn(username string) (*http.Client, string) {
	e.t.Helper()
	browser, status, body := e.signIn(username)
	if status != 303 {
		e.t.Fatalf("callback: %d %s", status, body)
	}
	st, me := e.get(browser, "/api/auth/me")
	if st != 200 {
		e.t.Fatalf("me after sign-in: %d %s", st, me)
	}
	return browser, me
}

func (e *oidcEnv) get(browser *http.Client, path string) (int, string) {
	e.t.Helper()
	res, err := browser.Get(e.apiURL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func (e *oidcEnv) adminUser() string  { return "test-user@" + e.host } // email test-user@zitadel.ch, subject id1
func (e *oidcEnv) memberUser() string { return "test-user2" }          // email test-user2@zitadel.ch, subject id2

// TestOIDC_SignInThroughARealProvider runs zitadel/oidc's example OpenID
// Provider in-process and signs in through it as a browser would. Nothing
// is mocked.
func TestOIDC_SignInThroughARealProvider(t *testing.T) {
	e := newOIDCEnv(t)
	e.configure(auth.OIDCConfig{AdminEmails: []string{"Test-User@zitadel.ch"}})
	// A conversation from before accounts becomes the first admin's.
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO conversations (id, title) VALUES ('conv_old', 'old')`); err != nil {
		t.Fatal(err)
	}
	_, me := e.mustSignIn(e.adminUser())
	if !strings.Contains(me, `"email":"test-user@zitadel.ch"`) || !strings.Contains(me, `"role":"admin"`) {
		t.Errorf("admin by OIDC_ADMIN_EMAILS: %s", me)
	}
	var owner string
	if err := e.pool.QueryRow(context.Background(), `SELECT coalesce(c.owner_id, '') || ' ' || u.email FROM conversations c
		LEFT JOIN users u ON u.id = c.owner_id WHERE c.id = 'conv_old'`).Scan(&owner); err != nil || owner == "" || !strings.HasSuffix(owner, " test-user@zitadel.ch") {
		t.Errorf("the conversation from before accounts belongs to %q (%v), want the first admin", owner, err)
	}
	_, me2 := e.mustSignIn(e.memberUser())
	if !strings.Contains(me2, `"email":"test-user2@zitadel.ch"`) || !strings.Contains(me2, `"role":"member"`) {
		t.Errorf("member: %s", me2)
	}
	// Signing in again finds the same account (by issuer and subject).
	if _, again := e.mustSignIn(e.memberUser()); again != me2 {
		t.Errorf("second sign-in: %s, first %s", again, me2)
	}
	var n int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM users WHERE oidc_issuer = $1`, e.issuer).Scan(&n); err != nil || n != 2 {
		t.Errorf("%d linked accounts, want 2 (%v)", n, err)
	}

	// A callback whose state does not match this browser's is refused.
	jar, _ := cookiejar.New(nil)
	st, body := e.get(&http.Client{Jar: jar, Transport: specTransport{}}, "/api/auth/oidc/callback?state=forged&code=x")
	if st != 401 || !strings.Contains(body, "oidc_failed") {
		t.Errorf("forged callback: %d %s", st, body)
	}
}

// TestOIDC_RoleIsReevaluatedAtEverySignIn: whether a person is an admin is
// the provider's and the settings' answer at each sign-in, by email
// (OIDC_ADMIN_EMAILS) or by the groups claim (OIDC_ADMIN_GROUP). A session
// opened while admin loses admin rights the moment the account is demoted,
// since every request reads the role.
func TestOIDC_RoleIsReevaluatedAtEverySignIn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		admin   func(e *oidcEnv) // makes test-user2 an admin
		demoted func(e *oidcEnv) // takes that away
	}{
		{
			name:    "OIDC_ADMIN_EMAILS",
			admin:   func(e *oidcEnv) { e.configure(auth.OIDCConfig{AdminEmails: []string{"test-user2@zitadel.ch"}}) },
			demoted: func(e *oidcEnv) { e.configure(auth.OIDCConfig{AdminEmails: []string{"someone-else@zitadel.ch"}}) },
		},
		{
			name: "groups claim",
			admin: func(e *oidcEnv) {
				e.configure(auth.OIDCConfig{AdminGroup: "toolgate-admins"})
				e.users.setGroups("id2", "staff", "toolgate-admins")
			},
			demoted: func(e *oidcEnv) { e.users.setGroups("id2", "staff") },
		},
		{
			name: "groups claim named by OIDC_GROUPS_CLAIM",
			admin: func(e *oidcEnv) {
				e.configure(auth.OIDCConfig{AdminGroup: "staff", GroupsClaim: "groups"})
				e.users.setGroups("id2", "staff")
			},
			demoted: func(e *oidcEnv) { e.configure(auth.OIDCConfig{AdminGroup: "staff", GroupsClaim: "roles"}) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newOIDCEnv(t)
			// Someone else in the groups claim is no admin.
			e.users.setGroups("id1", "staff-x")
			tc.admin(e)
			old, me := e.mustSignIn(e.memberUser())
			if !strings.Contains(me, `"role":"admin"`) {
				t.Fatalf("not admin: %s", me)
			}
			if _, other := e.mustSignIn(e.adminUser()); !strings.Contains(other, `"role":"member"`) {
				t.Errorf("test-user, in neither the emails nor the group: %s", other)
			}
			if st, body := e.get(old, "/api/users"); st != 200 {
				t.Fatalf("the admin's session lists users: %d %s", st, body)
			}

			tc.demoted(e)
			if _, me := e.mustSignIn(e.memberUser()); !strings.Contains(me, `"role":"member"`) {
				t.Errorf("signed in again after the demotion: %s, want member", me)
			}
			// The session opened while admin is a member's now.
			if st, body := e.get(old, "/api/users"); st != 403 || !strings.Contains(body, "admin_only") {
				t.Errorf("the demoted admin's old session on GET /api/users: %d %s, want 403 admin_only", st, body)
			}
			if _, me := e.get(old, "/api/auth/me"); !strings.Contains(me, `"role":"member"`) {
				t.Errorf("the old session's me: %s", me)
			}
		})
	}
}

// TestOIDC_DisabledAccountCannotSignIn: a disabled account is refused by
// the provider's sign-in too, whether it was linked at an earlier sign-in
// or created by an admin and never used; no session is opened.
func TestOIDC_DisabledAccountCannotSignIn(t *testing.T) {
	e := newOIDCEnv(t)
	e.configure(auth.OIDCConfig{AdminEmails: []string{"test-user@zitadel.ch"}})
	_, _ = e.mustSignIn(e.adminUser())
	admin, err := e.auth.Accounts.OldestActiveAdmin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	asAdmin := auth.WithUser(context.Background(), admin)
	refused := func(what string) {
		t.Helper()
		browser, status, body := e.signIn(e.memberUser())
		if status != 401 || !strings.Contains(body, "account_disabled") {
			t.Errorf("%s: callback %d %s, want 401 account_disabled", what, status, body)
		}
		if st, _ := e.get(browser, "/api/auth/me"); st != 401 {
			t.Errorf("%s: a session was opened (me: %d)", what, st)
		}
	}

	// Created by an admin, disabled before its first sign-in: not linked.
	u, err := e.auth.Accounts.CreateUser(asAdmin, auth.NewUser{Email: "test-user2@zitadel.ch", Role: auth.Member})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.auth.Accounts.DisableUser(asAdmin, u.ID); err != nil {
		t.Fatal(err)
	}
	refused("disabled before the first sign-in")
	var subject string
	if err := e.pool.QueryRow(context.Background(), `SELECT coalesce(oidc_subject, '') FROM users WHERE id = $1`, u.ID).Scan(&subject); err != nil || subject != "" {
		t.Errorf("the disabled account was linked to %q (%v)", subject, err)
	}

	// Enabled, it signs in and is linked; disabled again, it is refused.
	enabled := false
	if _, err := e.auth.Accounts.UpdateUser(asAdmin, u.ID, auth.UserChange{Disabled: &enabled}); err != nil {
		t.Fatal(err)
	}
	browser, me := e.mustSignIn(e.memberUser())
	if !strings.Contains(me, u.ID) {
		t.Fatalf("signed in as %s, want the admin-created account %s", me, u.ID)
	}
	if err := e.auth.Accounts.DisableUser(asAdmin, u.ID); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.get(browser, "/api/auth/me"); st != 401 {
		t.Errorf("the disabled account's session: %d", st)
	}
	refused("disabled after linking")
}
