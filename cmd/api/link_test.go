package main

import (
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testdb"
)

// TestRun_SignInLinkNamesThePortListenedOn: with LISTEN_ADDR=127.0.0.1:0
// the offline demo's sign-in link carries the port the API really listens
// on, and opening it signs in (303 to the app with a session cookie).
func TestRun_SignInLinkNamesThePortListenedOn(t *testing.T) {
	env := map[string]string{"DATABASE_URL": testdb.URL(t), "LISTEN_ADDR": "127.0.0.1:0",
		"EMULATOR_ADDR": "127.0.0.1:0", "DEMO_MCP_ADDR": "127.0.0.1:0",
		"SECRETS_KEY_FILE": filepath.Join(t.TempDir(), "secrets.key")}
	logs, _, _, _ := launch(t, env)
	linkRE := regexp.MustCompile(`toolgate: sign in: (http://127\.0\.0\.1:(\d+)/api/auth/link\?token=\S+)`)
	var m []string
	for deadline := time.Now().Add(20 * time.Second); m == nil; {
		if m = linkRE.FindStringSubmatch(logs.String()); m == nil {
			if time.Now().After(deadline) {
				t.Fatalf("no sign-in link printed; output:\n%s", logs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if m[2] == "0" {
		t.Fatalf("the link names port 0: %s", m[1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var res *http.Response
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		if res, err = client.Get(m[1]); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("open the link: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) == 0 {
		t.Errorf("opening the link: %d, cookies %v; want 303 with the session cookie", res.StatusCode, res.Cookies())
	}
	// The sign-in page is told to point at the terminal's link.
	base := strings.TrimSuffix(m[1], m[1][strings.Index(m[1], "/api/"):])
	st, err := http.Get(base + "/api/auth/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(st.Body)
	st.Body.Close()
	if !strings.Contains(string(body), `"sign_in_link":true`) {
		t.Errorf("GET /api/auth/status in the offline demo = %s, want sign_in_link true", body)
	}
}
