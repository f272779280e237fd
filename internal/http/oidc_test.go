package http_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"

	"github.com/toolgate/toolgate/internal/auth"
	toolhttp "github.com/toolgate/toolgate/internal/http"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/testdb"
)

// TestOIDC_SignInThroughARealProvider runs zitadel/oidc's example OpenID
// Provider in-process and signs in through it as a browser would: our
// login redirects to the provider, its login form is filled in and posted,
// the provider sends the code back, and the callback verifies the ID token
// and opens a session. Nothing is mocked.
func TestOIDC_SignInThroughARealProvider(t *testing.T) {
	pool := testdb.New(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	api := httptest.NewUnstartedServer(nil)
	apiURL := "http://" + api.Listener.Addr().String()
	provider := httptest.NewUnstartedServer(nil)
	issuer := "http://" + provider.Listener.Addr().String()
	st := storage.NewStorageWithClients(storage.NewUserStore(issuer),
		map[string]*storage.Client{"toolgate": storage.WebClient("toolgate", "toolgate-secret", apiURL+"/api/auth/oidc/callback")})
	provider.Config.Handler = exampleop.SetupServer(issuer, st, nil, false)
	provider.Start()
	defer provider.Close()

	authn := auth.NewService(postgres.NewUserStore(pool), auth.Options{Mode: auth.ModeOIDC, OIDC: auth.NewOIDC(auth.OIDCConfig{
		Issuer: issuer, ClientID: "toolgate", ClientSecret: "toolgate-secret", RedirectURL: apiURL + "/api/auth/oidc/callback",
		AdminEmails: []string{"Test-User@zitadel.ch"}})}, log)
	store := postgres.NewStore(pool)
	api.Config.Handler = toolhttp.NewServer(log, policy.NewService(store, &mcpclient.Discoverer{}, log), nil, authn, store,
		toolhttp.Options{MaxBodyBytes: 1 << 20})
	api.Start()
	defer api.Close()

	signIn := func(username string) (*http.Client, string) {
		t.Helper()
		jar, _ := cookiejar.New(nil)
		// The browser stops at the callback's redirect to the web app.
		browser := &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
			if r.URL.String() == apiURL+"/" {
				return http.ErrUseLastResponse
			}
			return nil
		}}
		res, err := browser.Get(apiURL + "/api/auth/oidc/login")
		if err != nil {
			t.Fatal(err)
		}
		form, _ := io.ReadAll(res.Body)
		res.Body.Close()
		m := regexp.MustCompile(`name="id" value="([^"]+)"`).FindSubmatch(form)
		if res.StatusCode != 200 || m == nil || !strings.HasPrefix(res.Request.URL.String(), issuer+"/login/") {
			t.Fatalf("no login form from the provider: %d %s\n%s", res.StatusCode, res.Request.URL, form)
		}
		res, err = browser.PostForm(issuer+"/login/username", url.Values{"id": {string(m[1])},
			"username": {username}, "password": {"verysecure"}})
		if err != nil {
			t.Fatal(err)
		}
		back, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 303 || res.Request.URL.Path != "/api/auth/oidc/callback" {
			t.Fatalf("callback %s: %d %s", res.Request.URL, res.StatusCode, back)
		}
		res, err = browser.Get(apiURL + "/api/auth/me")
		if err != nil {
			t.Fatal(err)
		}
		me, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("me after sign-in: %d %s", res.StatusCode, me)
		}
		return browser, string(me)
	}

	host := strings.Split(strings.TrimPrefix(issuer, "http://"), ":")[0]
	_, me := signIn("test-user@" + host)
	if !strings.Contains(me, `"email":"test-user@zitadel.ch"`) || !strings.Contains(me, `"role":"admin"`) {
		t.Errorf("admin by OIDC_ADMIN_EMAILS: %s", me)
	}
	_, me2 := signIn("test-user2")
	if !strings.Contains(me2, `"email":"test-user2@zitadel.ch"`) || !strings.Contains(me2, `"role":"member"`) {
		t.Errorf("member: %s", me2)
	}
	// Signing in again finds the same account (by issuer and subject).
	_, again := signIn("test-user2")
	if again != me2 {
		t.Errorf("second sign-in: %s, first %s", again, me2)
	}
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM users WHERE oidc_issuer = $1`, issuer).Scan(&n); err != nil || n != 2 {
		t.Errorf("%d linked accounts, want 2 (%v)", n, err)
	}

	// A callback whose state does not match this browser's is refused.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	res, err := browser.Get(apiURL + "/api/auth/oidc/callback?state=forged&code=x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 401 || !strings.Contains(string(body), "oidc_failed") {
		t.Errorf("forged callback: %d %s", res.StatusCode, body)
	}
}
