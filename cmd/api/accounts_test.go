package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

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
// server prints and logs a one-time setup link; it creates the first admin
// once, then is refused.
func TestRun_FirstRunPrintsASetupLinkThatWorksOnce(t *testing.T) {
	env := map[string]string{"DATABASE_URL": testdb.MissingURL(t), "AUTH_MODE": "local", "OFFLINE_DEMO": "false"}
	base, logs, _ := start(t, env)
	m := regexp.MustCompile(`toolgate: first run: create the admin account at (http://[^/]+)/setup\?token=([A-Za-z0-9_-]+)`).FindAllStringSubmatch(logs.String(), -1)
	if len(m) != 2 || m[0][1] != base { // once on stdout, once in the log
		t.Fatalf("setup link printed %d times (want stdout and log) for %s:\n%s", len(m), base, logs)
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
