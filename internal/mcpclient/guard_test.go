package mcpclient_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/netguard"
)

func newGuard(t *testing.T, c netguard.Config) *netguard.Guard {
	t.Helper()
	g, err := netguard.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// countedDemo serves the demo MCP server and counts the requests it gets.
func countedDemo(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	demo := demomcp.New(demomcp.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		demo.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", &n
}

func TestListToolsWithAGuardRefusesWhatItRefuses(t *testing.T) {
	url, hits := countedDemo(t)
	port := url[strings.LastIndex(url, ":")+1 : strings.LastIndex(url, "/")]

	for _, u := range []string{url, "http://2130706433:" + port + "/mcp", "http://[::ffff:127.0.0.1]:" + port + "/mcp"} {
		d := &mcpclient.Discoverer{Guard: newGuard(t, netguard.Config{AllowPrivate: true})}
		_, err := d.ListTools(t.Context(), u, map[string]string{"Authorization": "Bearer s3cret"})
		e := assertDiscoveryFailed(t, err, "")
		if !strings.Contains(e.Message, "Toolgate's URL policy does not allow this address") || !strings.Contains(e.Message, "MCP_ALLOWED_HOSTS") {
			t.Errorf("%s: message %q does not explain the refusal", u, e.Message)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the refused server got %d requests", hits.Load())
	}

	d := &mcpclient.Discoverer{Guard: newGuard(t, netguard.Config{AllowedHosts: "127.0.0.1"})}
	if tools, err := d.ListTools(t.Context(), url, nil); err != nil || len(tools) != 6 {
		t.Fatalf("allowed by MCP_ALLOWED_HOSTS: %d tools, %v", len(tools), err)
	}
}

func TestListToolsDoesNotFollowARedirectToAnotherHost(t *testing.T) {
	target, hits := countedDemo(t)
	redirector := httptest.NewServer(http.RedirectHandler(target, http.StatusTemporaryRedirect))
	t.Cleanup(redirector.Close)
	// "localhost" and "127.0.0.1" are one machine but two origins.
	sameMachine := strings.Replace(target, "127.0.0.1", "localhost", 1)
	redirector2 := httptest.NewServer(http.RedirectHandler(sameMachine, http.StatusPermanentRedirect))
	t.Cleanup(redirector2.Close)

	for _, d := range []*mcpclient.Discoverer{{}, {Guard: newGuard(t, netguard.Config{AllowLoopback: true})}} {
		for _, from := range []string{redirector.URL + "/mcp", redirector2.URL + "/mcp"} {
			_, err := d.ListTools(t.Context(), from, nil)
			e := assertDiscoveryFailed(t, err, "")
			if !strings.Contains(e.Message, "redirected to another host") {
				t.Errorf("message %q does not say the redirect was refused", e.Message)
			}
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the redirect target got %d requests", hits.Load())
	}
}

func TestListToolsFollowsARedirectOnTheSameHost(t *testing.T) {
	demo := demomcp.New(demomcp.Options{})
	mux := http.NewServeMux()
	mux.Handle("/old", http.RedirectHandler("/mcp", http.StatusPermanentRedirect))
	mux.Handle("/mcp", demo.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	d := &mcpclient.Discoverer{Guard: newGuard(t, netguard.Config{AllowLoopback: true})}
	if tools, err := d.ListTools(t.Context(), srv.URL+"/old", nil); err != nil || len(tools) != 6 {
		t.Fatalf("same-host redirect: %d tools, %v", len(tools), err)
	}
}

func TestDiscoveryErrorsMaskTheQueryString(t *testing.T) {
	var mu sync.Mutex
	var gotKey string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotKey = r.URL.Query().Get("api_key")
		mu.Unlock()
		http.Error(w, "nope", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	u := srv.URL + "/mcp?api_key=sk-live-abcdefghijklmnop&region=eu"
	_, err := (&mcpclient.Discoverer{}).ListTools(t.Context(), u, nil)
	e := assertDiscoveryFailed(t, err, srv.URL+"/mcp?api_key=********mnop&region=********: the server answered 403 Forbidden (check the server's headers, e.g. its Authorization token)")
	if strings.Contains(err.Error(), "sk-live") || strings.Contains(e.Message, "sk-live") {
		t.Errorf("the secret is in the error: %v", err)
	}
	// A transport error quotes the request's URL in its text (the cause
	// that reaches the logs).
	closed := closedPort(t) + "?token=tok-abcdefghijklmnop"
	_, err = (&mcpclient.Discoverer{}).ListTools(t.Context(), closed, nil)
	assertDiscoveryFailed(t, err, "")
	if !strings.Contains(err.Error(), "token=********mnop") || strings.Contains(err.Error(), "tok-abc") {
		t.Errorf("the error's text does not mask the token: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if gotKey != "sk-live-abcdefghijklmnop" {
		t.Errorf("the server got api_key %q, want the real one", gotKey)
	}
}
