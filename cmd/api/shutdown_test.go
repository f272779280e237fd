package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testdb"
)

// TestRun_ShutdownEndsOpenTabStreamsAtOnce: a browser tab keeps a
// conversation's event stream open (GET /api/conversations/{id}/events).
// Ctrl-C (the run context ends) must stop the server promptly, ending that
// stream, not wait out SHUTDOWN_TIMEOUT (30 s here) for it. Nor may a
// connection dialed and never used (a client's spare one, which a busy
// machine makes more likely) hold it, to Toolgate or to its offline helpers.
func TestRun_ShutdownEndsOpenTabStreamsAtOnce(t *testing.T) {
	emulator, demo := freeAddr(t), freeAddr(t)
	env := map[string]string{"DATABASE_URL": testdb.URL(t), "SHUTDOWN_TIMEOUT": "30s",
		"EMULATOR_ADDR": emulator, "DEMO_MCP_ADDR": demo}
	base, logs, stop := start(t, env)
	var out strings.Builder
	if err := run(context.Background(), []string{"token", "create", testAdminEmail, "tab"}, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatalf("token create: %v", err)
	}
	token := strings.TrimSpace(out.String())
	call := func(method, path, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != 200 {
			b, _ := io.ReadAll(res.Body)
			t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
		}
		return res
	}
	res := call("POST", "/api/responses", `{"input":"hello"}`)
	conv := res.Header.Get("X-Conversation-Id")
	_, _ = io.Copy(io.Discard, res.Body) // the turn runs to its end
	res.Body.Close()

	// The tab follows its conversation, and a settings page its settings.
	streams := []string{"/api/conversations/" + conv + "/events", "/api/settings/events"}
	ended := make(chan time.Duration, len(streams))
	began := time.Now()
	for _, path := range streams {
		tab := call("GET", path, "")
		defer tab.Body.Close()
		if _, err := bufio.NewReader(tab.Body).ReadString('\n'); err != nil {
			t.Fatalf("the tab's stream %s did not open: %v", path, err)
		}
		go func() {
			_, _ = io.Copy(io.Discard, tab.Body)
			ended <- time.Since(began)
		}()
	}

	for _, addr := range []string{strings.TrimPrefix(base, "http://"), emulator, demo} {
		spare, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer spare.Close()
	}
	time.Sleep(100 * time.Millisecond) // the servers have accepted them

	stopping := time.Now()
	stop()
	if d := time.Since(stopping); d > 3*time.Second {
		t.Errorf("shutting down with a tab's streams and spare connections open took %v; want it to end them at once, not wait out SHUTDOWN_TIMEOUT or net/http's 5 s for a new connection\nlogs:\n%s", d, logs)
	}
	for range streams {
		select {
		case d := <-ended:
			if d > 5*time.Second {
				t.Errorf("a tab's stream ended after %v", d)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a tab's stream is still open after shutdown")
		}
	}
}
