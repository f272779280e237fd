package main

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/mcpclient"
)

// syncBuffer is an io.Writer the server logs to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var urlRE = regexp.MustCompile(`url=(\S+)`)

// start runs the command and returns the MCP URL it logged, a function
// that stops it and returns run's error, and its log.
func start(t *testing.T, args ...string) (string, func() error, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, out) }()
	stop := func() error {
		cancel()
		select {
		case err := <-done:
			return err
		// Longer than run's own 5 s shutdown timeout: a shutdown that is not
		// graceful shows as run's error, not as this test giving up first
		// (on a loaded machine 3 s was not always enough).
		case <-time.After(10 * time.Second):
			t.Fatal("run did not return within 10s of cancellation")
			return nil
		}
	}
	t.Cleanup(func() { cancel() })
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := urlRE.FindStringSubmatch(out.String()); m != nil {
			return m[1], stop, out
		}
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v\n%s", err, out)
		default:
		}
	}
	t.Fatalf("no URL logged:\n%s", out)
	return "", nil, nil
}

func TestRunServesTheDemoAndShutsDownWithOpenStreams(t *testing.T) {
	url, stop, out := start(t, "-addr", "127.0.0.1:0")
	if !strings.HasSuffix(url, "/mcp") || strings.HasSuffix(url, ":0/mcp") {
		t.Errorf("logged URL %q, want the real address ending in /mcp", url)
	}

	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz status %d, want 200", resp.StatusCode)
	}
	tools, err := (&mcpclient.Discoverer{}).ListTools(t.Context(), url, nil)
	if err != nil || len(tools) != 6 {
		t.Errorf("ListTools = %d tools, %v; want 6 tools", len(tools), err)
	}

	// A client with the standalone SSE stream holds a request open forever.
	session, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).
		Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	if err := stop(); err != nil {
		t.Errorf("run returned %v, want nil after a graceful shutdown", err)
	}
	if !strings.Contains(out.String(), "shutting down") {
		t.Errorf("log lacks the shutdown:\n%s", out)
	}
}

func TestRunTakesTheTokenFromTheEnvironment(t *testing.T) {
	t.Setenv("DEMO_MCP_TOKEN", "s3cret")
	url, stop, out := start(t, "-addr", "127.0.0.1:0")
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("run returned %v, want nil after a graceful shutdown", err)
		}
	}()
	if !strings.Contains(out.String(), "token_required=true") {
		t.Errorf("log does not say a token is required:\n%s", out)
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /mcp without a token: status %d, want 401", resp.StatusCode)
	}
}

func TestRunRejectsBadArguments(t *testing.T) {
	tests := [][]string{
		{"-no-such-flag"},
		{"-addr", "127.0.0.1:0", "extra"},
		{"-addr", "not an address"},
	}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			if err := run(t.Context(), args, &syncBuffer{}); err == nil {
				t.Error("run succeeded, want an error")
			}
		})
	}
}

func TestRunPrintsUsageForHelp(t *testing.T) {
	out := &syncBuffer{}
	if err := run(t.Context(), []string{"-h"}, out); err != nil {
		t.Errorf("run -h = %v, want nil", err)
	}
	if !strings.Contains(out.String(), "-addr") {
		t.Errorf("usage lacks -addr:\n%s", out)
	}
}
