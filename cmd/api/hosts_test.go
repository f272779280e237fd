package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testdb"
)

// TestRun_AllowedHostsReachTheServer: ALLOWED_HOSTS set for the binary is
// the list the API answers to, and nothing else (DNS rebinding defence).
func TestRun_AllowedHostsReachTheServer(t *testing.T) {
	base, _, _ := start(t, map[string]string{"DATABASE_URL": testdb.URL(t), "ALLOWED_HOSTS": "toolgate.test", "AUTH_MODE": "local"})
	get := func(host string) (int, string) {
		req, _ := http.NewRequest("GET", base+"/api/auth/status", nil)
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get("toolgate.test:8080"); code != 200 {
		t.Errorf("Host toolgate.test: got %d %s, want 200", code, body)
	}
	code, body := get("localhost")
	if code != http.StatusMisdirectedRequest || !strings.Contains(body, "ALLOWED_HOSTS") {
		t.Errorf("Host localhost with ALLOWED_HOSTS=toolgate.test: got %d %s, want 421 naming ALLOWED_HOSTS", code, body)
	}
}
