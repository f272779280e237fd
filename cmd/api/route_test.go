package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testdb"
)

// waitLog waits for re in the logs and returns its submatches.
func waitLog(t *testing.T, logs *syncBuffer, re *regexp.Regexp) []string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(logs.String()); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line matching %s; output:\n%s", re, logs)
		}
	}
}

// TestRun_RouteIsLoggedWithTheFaceListenedOn: offline the route is gateway,
// the start log says so and why in one line, and the face it names (where
// the requests' tool entries point) is on the port really listened on when
// LISTEN_ADDR asks for port 0; MCP_ROUTE=direct is logged as direct.
func TestRun_RouteIsLoggedWithTheFaceListenedOn(t *testing.T) {
	env := map[string]string{"DATABASE_URL": testdb.URL(t), "LISTEN_ADDR": "127.0.0.1:0",
		"EMULATOR_ADDR": "127.0.0.1:0", "DEMO_MCP_ADDR": "127.0.0.1:0", "OFFLINE_DEMO": "false",
		"SECRETS_KEY_FILE": filepath.Join(t.TempDir(), "secrets.key")}
	logs, _, _, stop := launch(t, env)
	listening := waitLog(t, logs, regexp.MustCompile(`toolgate is listening" url=http://127\.0\.0\.1:(\d+)`))
	m := waitLog(t, logs, regexp.MustCompile(`msg="MCP route: gateway[^"]*" route=gateway reason="offline[^"]*" face=http://127\.0\.0\.1:(\d+)/mcp/\{server_label\} token_ttl=15m0s`))
	if m[1] == "0" || m[1] != listening[1] {
		t.Errorf("the face names port %s, the API listens on %s", m[1], listening[1])
	}
	if n := strings.Count(logs.String(), "MCP route:"); n != 1 {
		t.Errorf("the route is logged %d times, want once", n)
	}
	stop()

	env["MCP_ROUTE"] = "direct"
	logs, _, _, _ = launch(t, env)
	waitLog(t, logs, regexp.MustCompile(`toolgate is listening`))
	waitLog(t, logs, regexp.MustCompile(`msg="MCP route: direct[^"]*" route=direct reason="MCP_ROUTE=direct is set`))
}
