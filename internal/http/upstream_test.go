package http_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/emulator"
)

// upstreamTap is the OpenAI emulator behind a tap that records every
// request Toolgate sends it and can add a behavior (faults, timing) to them.
type upstreamTap struct {
	url string
	emu *emulator.Server

	mu       sync.Mutex
	behavior string
	requests []map[string]any // decoded bodies of POST /v1/responses, in order
	raw      [][]byte         // the same bodies as they arrived
	arrived  []time.Time      // when each of requests arrived
	// before, when set, sees each request's body before the emulator
	// does (a hostile provider acting on what Toolgate sent it).
	before func(raw []byte)
}

func newUpstreamTap(t testing.TB) *upstreamTap {
	t.Helper()
	emu, err := emulator.New(emulator.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tap := &upstreamTap{emu: emu}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tap.mu.Lock()
		h := tap.emu.Handler()
		tap.mu.Unlock()
		if r.Method == http.MethodPost && r.URL.Path == "/v1/responses" {
			at := time.Now()
			raw, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(raw))
			var body map[string]any
			_ = json.Unmarshal(raw, &body)
			tap.mu.Lock()
			tap.requests = append(tap.requests, body)
			tap.raw = append(tap.raw, raw)
			tap.arrived = append(tap.arrived, at)
			if tap.behavior != "" {
				r.Header.Set(emulator.BehaviorHeader, tap.behavior)
			}
			before := tap.before
			tap.mu.Unlock()
			if before != nil {
				before(raw)
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	tap.url = srv.URL
	return tap
}

// onRequest calls f with each following request's body before the
// emulator answers it (nil: none).
func (u *upstreamTap) onRequest(f func(raw []byte)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.before = f
}

// setBehavior applies behavior to every following request ("" for none).
func (u *upstreamTap) setBehavior(b string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.behavior = b
}

// sent returns the requests received so far.
func (u *upstreamTap) sent() []map[string]any {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]map[string]any(nil), u.requests...)
}

// sentRaw returns the bodies of the requests received so far, as sent.
func (u *upstreamTap) sentRaw() [][]byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([][]byte(nil), u.raw...)
}

// arrivedAt is when request i (from 0) arrived, waiting up to 10 s for it.
func (u *upstreamTap) arrivedAt(t testing.TB, i int) time.Time {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Microsecond) {
		u.mu.Lock()
		n := len(u.arrived)
		if i < n {
			at := u.arrived[i]
			u.mu.Unlock()
			return at
		}
		u.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("upstream request %d never arrived (%d did)", i, n)
		}
	}
}

// count is the number of requests received so far.
func (u *upstreamTap) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.requests)
}

// replace puts a fresh emulator behind the same URL: a provider that has
// forgotten every stored response.
func (u *upstreamTap) replace(t testing.TB) {
	emu, err := emulator.New(emulator.Config{})
	if err != nil {
		t.Fatal(err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.emu = emu
}
