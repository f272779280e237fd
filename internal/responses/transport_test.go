package responses_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/responses"
)

// countingAPI serves a recorded stream at /v1/responses and counts the
// connections clients open to it and the HTTP versions they speak.
type countingAPI struct {
	srv      *httptest.Server
	newConns atomic.Int64
	h2       atomic.Int64
	requests atomic.Int64
}

func startCountingAPI(t *testing.T, body []byte, h2 bool) *countingAPI {
	t.Helper()
	a := &countingAPI{}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.requests.Add(1)
		if r.ProtoMajor == 2 {
			a.h2.Add(1)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	a.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			a.newConns.Add(1)
		}
	}
	if h2 {
		a.srv.EnableHTTP2 = true
		a.srv.StartTLS()
	} else {
		a.srv.Start()
	}
	t.Cleanup(a.srv.Close)
	return a
}

// TestTransport_ReusesConnections: after a warm-up round of c concurrent
// streams, n more streams (rounds of c concurrent, then one by one) open
// new connections for at most 1% of them, over HTTP/1.1 and over HTTP/2
// with TLS (where every new connection is a handshake).
func TestTransport_ReusesConnections(t *testing.T) {
	body := fixtureSSE(t, "dotnet-extensions_mcp-never-approval_streaming.sse")
	const c, rounds, sequential = 16, 16, 50
	for _, tc := range []struct {
		name string
		h2   bool
	}{{"http1", false}, {"h2-tls", true}} {
		t.Run(tc.name, func(t *testing.T) {
			api := startCountingAPI(t, body, tc.h2)
			tr := responses.Transport{}
			if tc.h2 {
				roots := x509.NewCertPool()
				roots.AddCert(api.srv.Certificate())
				tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
			}
			client := responses.New(responses.Config{APIKey: "sk-test", BaseURL: api.srv.URL + "/v1/", Model: "m", Transport: tr})
			one := func() {
				es, err := client.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hi"})
				if err != nil {
					t.Errorf("Stream: %v", err)
					return
				}
				if s := readAll(t, es); s.Err != nil || s.ResponseID() == "" {
					t.Errorf("stream: %v (%s)", s.Err, s.describe())
				}
			}
			concurrent := func() {
				var wg sync.WaitGroup
				for range c {
					wg.Go(one)
				}
				wg.Wait()
			}
			concurrent() // warm-up: the pool fills
			warm := api.newConns.Load()
			for range rounds {
				concurrent()
			}
			for range sequential {
				one()
			}
			n := int64(rounds*c + sequential)
			dialled := api.newConns.Load() - warm
			t.Logf("%s: warm-up opened %d connections; %d more for %d requests after it (%.1f%% reused)",
				tc.name, warm, dialled, n, 100*float64(n-dialled)/float64(n))
			if dialled*100 > n {
				t.Errorf("%d new connections for %d requests after warm-up; want reuse for at least 99%%", dialled, n)
			}
			if tc.h2 && api.h2.Load() != api.requests.Load() {
				t.Errorf("%d of %d requests spoke HTTP/2; want all (ForceAttemptHTTP2)", api.h2.Load(), api.requests.Load())
			}
		})
	}
}

// TestTransport_ReusesTheConnectionWhenTheBodyEndsAfterTheLastEvent: a
// stream ends at its terminal event, but an HTTP/1.1 body ends only with
// the last chunk, which a server (or a proxy before it) may send a moment
// later. Closing the body before reading it throws the connection away;
// the next request dials again (against the real API, with a TLS
// handshake). The rest of the body is read, off the turn's path, and the
// connection goes back to the pool.
func TestTransport_ReusesTheConnectionWhenTheBodyEndsAfterTheLastEvent(t *testing.T) {
	body := fixtureSSE(t, "dotnet-extensions_mcp-never-approval_streaming.sse")
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond) // the last chunk comes apart
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	client := responses.New(responses.Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1/", Model: "m"})
	const n = 10
	for range n {
		es, err := client.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hi"})
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		completed := false
		for !completed && es.Next() { // as a turn reads: to the terminal event, then Close
			completed = es.Event().Kind == conversation.EventCompleted
		}
		if err := es.Close(); err != nil || !completed {
			t.Fatalf("stream: completed %v, Close %v, Err %v", completed, err, es.Err())
		}
		time.Sleep(40 * time.Millisecond) // the last chunk has come
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("%d connections for %d streams one after another; want 1 (each kept alive for the next)", got, n)
	}
}

// TestTransport_AProviderThatGoesOnAfterTheLastEventIsCutOff: a hostile or
// broken provider that keeps sending after its terminal event, without
// end, holds neither the turn (Close returns at once) nor its connection:
// what follows is read for at most 64 KiB (huge: cut off well within a
// second) and 1 s (a trickle), then the connection is closed.
func TestTransport_AProviderThatGoesOnAfterTheLastEventIsCutOff(t *testing.T) {
	body := fixtureSSE(t, "dotnet-extensions_mcp-never-approval_streaming.sse")
	for _, tc := range []struct {
		name   string
		chunk  int
		within time.Duration
	}{{"huge", 4 << 10, 500 * time.Millisecond}, {"trickle", 1, 3 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			closed := make(chan struct{}, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write(body)
				w.(http.Flusher).Flush()
				junk := []byte(": " + strings.Repeat("x", tc.chunk) + "\n\n")
				for { // after the end, until the client hangs up
					if _, err := w.Write(junk); err != nil {
						closed <- struct{}{}
						return
					}
					w.(http.Flusher).Flush()
					time.Sleep(10 * time.Millisecond)
				}
			}))
			t.Cleanup(srv.Close)
			client := responses.New(responses.Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1/", Model: "m"})
			es, err := client.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hi"})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			completed := false
			for !completed && es.Next() {
				completed = es.Event().Kind == conversation.EventCompleted
			}
			began := time.Now()
			if err := es.Close(); err != nil || !completed {
				t.Fatalf("completed %v, Close %v", completed, err)
			}
			if d := time.Since(began); d > 100*time.Millisecond {
				t.Errorf("Close took %s: the turn waited for the rest of the body", d)
			}
			if es.Next() {
				t.Errorf("an event after the terminal one: %+v", es.Event())
			}
			select {
			case <-closed:
			case <-time.After(tc.within):
				t.Fatalf("the connection was still read %s after the terminal event", tc.within)
			}
		})
	}
}
