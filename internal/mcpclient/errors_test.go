package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/mcpclient"
)

// Each failure ends the discovery with its own sentence. The test measures
// no time: the discovery may take up to 30 s (a safety net), and a failure
// that waited for it would show the timeout's sentence instead of its own.
// Only the server that never answers gets the short Timeout its message
// names.
func TestListToolsFailuresSayWhatWentWrong(t *testing.T) {
	tests := []struct {
		name    string
		url     func(t *testing.T) string
		wantMsg string        // after "could not list tools at <url>: "
		timeout time.Duration // the Discoverer's; 30 s when zero
	}{
		{"nothing listens on the port", closedPort,
			"connection refused (is the MCP server running?)", 0},
		{"the server never answers", serveHTTP(hang),
			"timed out after 300ms (is the server overloaded, or is this not an MCP endpoint?)", 300 * time.Millisecond},
		{"the URL is an HTML 404 page", serveHTTP(htmlPage(http.StatusNotFound)),
			"the server answered 404 Not Found (check the URL: is it the server's MCP endpoint, often ending in /mcp?)", 0},
		{"the URL is an HTML page", serveHTTP(htmlPage(http.StatusOK)),
			"the server answered with text/html instead of MCP (is this the server's MCP endpoint?)", 0},
		{"the server fails", serveHTTP(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) }),
			"the server answered 500 Internal Server Error (the server or a proxy in front of it failed; try again later)", 0},
		{"the server rejects the request", serveHTTP(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"unsupported protocol version"}}`)
		}), `the server answered 400 Bad Request with the MCP error -32600 "unsupported protocol version"`, 0},
		{"the server closes the connection", serveHTTP(hangUp),
			"the server closed the connection without answering", 0},
		{"the host does not resolve", func(*testing.T) string { return "http://no-such-host.invalid/mcp" },
			`the host name "no-such-host.invalid" could not be resolved (check the URL)`, 0},
		{"the server lists a tool twice", fakeMCP(func(string) any {
			tool := map[string]any{"name": "dup", "inputSchema": map[string]any{"type": "object"}}
			return map[string]any{"tools": []any{tool, tool}}
		}), `the server listed the tool "dup" twice`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url(t)
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 30 * time.Second
			}
			_, err := (&mcpclient.Discoverer{Timeout: timeout}).ListTools(t.Context(), url, nil)
			assertDiscoveryFailed(t, err, url+": "+tt.wantMsg)
		})
	}
}

// A server whose every page of tools/list names a next page is asked for
// 100 pages, no more, and the discovery then fails saying so: it neither
// runs until its timeout (30 s here, a safety net, not a bound the test
// measures) nor lists forever.
func TestListToolsStopsAServerThatPagesForever(t *testing.T) {
	var pages atomic.Int64
	url := fakeMCP(func(cursor string) any {
		pages.Add(1)
		return map[string]any{"tools": []any{}, "nextCursor": cursor + "x"}
	})(t)
	tools, err := (&mcpclient.Discoverer{Timeout: 30 * time.Second}).ListTools(t.Context(), url, nil)
	if tools != nil {
		t.Errorf("tools %v, want none", tools)
	}
	assertDiscoveryFailed(t, err, url+": the server kept returning more pages of tools after 100 pages")
	if n := pages.Load(); n != 100 {
		t.Errorf("the server was asked for %d pages of tools, want 100", n)
	}
}

func TestListToolsSurvivesGarbageAnswers(t *testing.T) {
	tests := map[string]http.HandlerFunc{
		"JSON that is not JSON-RPC": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"hello":"world"}`)
		},
		"truncated JSON": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":`)
		},
		"an event stream of nonsense": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: not json\n\n")
		},
	}
	for name, handler := range tests {
		t.Run(name, func(t *testing.T) {
			url := serveHTTP(handler)(t)
			_, err := (&mcpclient.Discoverer{Timeout: 300 * time.Millisecond}).ListTools(t.Context(), url, nil)
			assertDiscoveryFailed(t, err, url+": the server's answers are not valid MCP (is this the server's MCP endpoint?)")
		})
	}
}

func TestListToolsGivesUpOnATooSlowServerEvenIfItAnswersLater(t *testing.T) {
	url := serveTools(t, 0, &mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)})
	_, err := (&mcpclient.Discoverer{Timeout: time.Nanosecond}).ListTools(t.Context(), url, nil)
	assertDiscoveryFailed(t, err, url+": timed out after 1ns (is the server overloaded, or is this not an MCP endpoint?)")
}

func TestListToolsReportsTheCallersCancellation(t *testing.T) {
	url := serveHTTP(hang)(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := (&mcpclient.Discoverer{}).ListTools(ctx, url, nil)
	assertDiscoveryFailed(t, err, url+": the discovery was cancelled before it finished")
}

// assertDiscoveryFailed checks err is the Upstream discovery error and, if
// wantAfterPrefix is set, that its message is "could not list tools at " + it.
func assertDiscoveryFailed(t *testing.T, err error, wantAfterPrefix string) *apperr.Error {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok {
		t.Fatalf("error %v (%T) is not an *apperr.Error", err, err)
	}
	if e.Kind != apperr.Upstream || e.Code != "discovery_failed" || e.Err == nil {
		t.Errorf("got kind %q code %q cause %v, want upstream discovery_failed with a cause", e.Kind, e.Code, e.Err)
	}
	if want := "could not list tools at " + wantAfterPrefix; wantAfterPrefix != "" && e.Message != want {
		t.Errorf("message:\n got %q\nwant %q", e.Message, want)
	}
	return e
}

func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr + "/mcp"
}

func serveHTTP(h http.HandlerFunc) func(t *testing.T) string {
	return func(t *testing.T) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL + "/mcp"
	}
}

func htmlPage(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprint(w, "<!doctype html><title>Not MCP</title><h1>Hello</h1>")
	}
}

// hang answers nothing until the client gives up. It reads the body first:
// only then does net/http notice the client closing the connection.
func hang(_ http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// countingTransport counts the requests a caller's client carried.
type countingTransport struct {
	base http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(r)
}
