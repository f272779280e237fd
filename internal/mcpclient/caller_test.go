package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/netguard"
)

// swappable serves whichever demo server it holds now, and counts the MCP
// methods it is sent.
type swappable struct {
	h       atomic.Pointer[http.Handler]
	mu      sync.Mutex
	methods map[string]int
	headers []string // X-Api-Key of every request
}

func (s *swappable) swap(d *demomcp.Demo) {
	h := d.Handler()
	s.h.Store(&h)
}

func (s *swappable) count(m string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.methods[m]
}

func serveSwappable(t *testing.T) (string, *swappable, *demomcp.Demo) {
	t.Helper()
	s := &swappable{methods: map[string]int{}}
	d := demomcp.New(demomcp.Options{})
	s.swap(d)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		s.mu.Lock()
		s.methods[msg.Method]++
		s.headers = append(s.headers, r.Header.Get("X-Api-Key"))
		s.mu.Unlock()
		(*s.h.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", s, d
}

func loopbackCaller(t *testing.T) *mcpclient.Caller {
	c := &mcpclient.Caller{Guard: newGuard(t, netguard.Config{AllowLoopback: true}), CallTimeout: 5 * time.Second}
	t.Cleanup(c.Close)
	return c
}

func TestCaller_KeepsOneSessionPerServer(t *testing.T) {
	url, s, demo := serveSwappable(t)
	c := loopbackCaller(t)
	headers := map[string]string{"X-Api-Key": "k-1"}
	if _, err := c.ListTools(context.Background(), url, headers); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if r := c.CallTool(context.Background(), url, headers, "get_forecast", json.RawMessage(`{"city":"Berlin"}`)); r.IsError {
			t.Fatalf("call failed: %+v", r)
		}
	}
	if n, calls := s.count("initialize"), len(demo.Calls()); n != 1 || calls != 3 {
		t.Fatalf("%d sessions opened for %d calls, want 1 for 3", n, calls)
	}
	// Other headers (an admin changed them) open another session.
	if r := c.CallTool(context.Background(), url, map[string]string{"X-Api-Key": "k-2"}, "get_forecast", json.RawMessage(`{"city":"Berlin"}`)); r.IsError {
		t.Fatalf("call failed: %+v", r)
	}
	if n := s.count("initialize"); n != 2 {
		t.Fatalf("%d sessions after the headers changed, want 2", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.headers[len(s.headers)-1] != "k-2" {
		t.Fatalf("the last request carried %q", s.headers[len(s.headers)-1])
	}
}

func TestCaller_OpensANewSessionWhenTheServerForgetsIt(t *testing.T) {
	url, s, old := serveSwappable(t)
	c := loopbackCaller(t)
	if r := c.CallTool(context.Background(), url, nil, "get_forecast", json.RawMessage(`{"city":"Berlin"}`)); r.IsError {
		t.Fatalf("call failed: %+v", r)
	}
	restarted := demomcp.New(demomcp.Options{}) // the server restarted: it knows no session
	s.swap(restarted)
	r := c.CallTool(context.Background(), url, nil, "get_forecast", json.RawMessage(`{"city":"Oslo"}`))
	if r.IsError || !strings.Contains(string(r.JSON), "Oslo") {
		t.Fatalf("call after the restart: %+v", r)
	}
	if len(old.Calls()) != 1 || len(restarted.Calls()) != 1 || s.count("initialize") != 2 {
		t.Fatalf("old server ran %d, new %d, sessions %d; want 1, 1, 2", len(old.Calls()), len(restarted.Calls()), s.count("initialize"))
	}
}

func TestCaller_NotRunOnlyWhenNothingWasSent(t *testing.T) {
	// A server that reads the tools/call and hangs up without answering.
	var calls atomic.Int32
	hangup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch {
		case req.ID == nil:
			w.WriteHeader(http.StatusAccepted)
		case req.Method == "initialize":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"h","version":"0"}}}`))
		case req.Method == "tools/list":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"tools":[]}}`))
		default:
			calls.Add(1)
			conn, _, _ := http.NewResponseController(w).Hijack()
			_ = conn.Close()
		}
	}))
	t.Cleanup(hangup.Close)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + l.Addr().String() + "/mcp?key=q-secret-1"
	_ = l.Close()
	demoURL, hits := countedDemo(t)

	refusing := &mcpclient.Caller{Guard: newGuard(t, netguard.Config{}), CallTimeout: 5 * time.Second}
	t.Cleanup(refusing.Close)
	for _, tc := range []struct {
		name    string
		c       *mcpclient.Caller
		url     string
		notRun  bool
		failure string
	}{
		{"connection refused", loopbackCaller(t), closed, true, "connection refused"},
		{"refused by the URL policy", refusing, demoURL, true, "URL policy does not allow"},
		{"hung up after reading it", loopbackCaller(t), hangup.URL, false, "closed the connection"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A listing first, so that the call goes on a kept session
			// (where a call that was not sent is retried once).
			_, _ = tc.c.ListTools(context.Background(), tc.url, map[string]string{"Authorization": "Bearer h-secret-2"})
			r := tc.c.CallTool(context.Background(), tc.url, map[string]string{"Authorization": "Bearer h-secret-2"}, "x", json.RawMessage(`{}`))
			if !r.IsError || r.NotRun != tc.notRun || !strings.Contains(r.Failure, tc.failure) || r.JSON != nil {
				t.Fatalf("result %+v, want not run %v and a failure saying %q", r, tc.notRun, tc.failure)
			}
			for _, secret := range []string{tc.url, "q-secret-1", "h-secret-2"} {
				if strings.Contains(r.Failure, secret) {
					t.Errorf("the failure names %q: %s", secret, r.Failure)
				}
			}
			// The listing's error (whose cause is logged) masks the URL's query.
			_, err := tc.c.ListTools(context.Background(), tc.url, nil)
			if err != nil && strings.Contains(err.Error(), "q-secret-1") {
				t.Errorf("the listing error shows the URL's query: %v", err)
			}
		})
	}
	if calls.Load() != 1 {
		t.Fatalf("the hang-up server got %d calls, want 1 (no retry of a call that was sent)", calls.Load())
	}
	if hits.Load() != 0 {
		t.Fatalf("the URL policy let %d requests through", hits.Load())
	}
}

func TestCaller_FollowsNoRedirectToAnotherHost(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		http.Error(w, "no", http.StatusTeapot)
	}))
	t.Cleanup(other.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/mcp", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)
	c := loopbackCaller(t)
	_, err := c.ListTools(context.Background(), redirecting.URL+"/mcp", map[string]string{"Authorization": "Bearer r-secret"})
	if err == nil || !strings.Contains(err.Error(), "redirected to another host") {
		t.Fatalf("err = %v", err)
	}
	r := c.CallTool(context.Background(), redirecting.URL+"/mcp", map[string]string{"Authorization": "Bearer r-secret"}, "x", json.RawMessage(`{}`))
	if !r.IsError || !strings.Contains(r.Failure, "redirected to another host") {
		t.Fatalf("call: %+v", r)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect target got %d requests", n)
	}
}
