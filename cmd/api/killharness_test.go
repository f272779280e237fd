package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/client"
)

// The harness of TestKill_FollowUpAtEachStep: the binary built with
// faultinject and run as a process, the provider behind a tap that holds a
// follow-up's answer, and an event stream read as it arrives.

// buildFaultinjectToolgate builds bin/toolgate with the faultinject tag: it
// kills itself where TOOLGATE_CRASH_AT says.
func buildFaultinjectToolgate(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("no go command to build the binary with:", err)
	}
	bin := filepath.Join(t.TempDir(), "toolgate")
	if out, err := exec.Command(goBin, "build", "-tags", "faultinject", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags faultinject: %v\n%s", err, out)
	}
	return bin
}

// binary is a running toolgate process.
type binary struct {
	base   string
	cmd    *exec.Cmd
	logs   *syncBuffer
	exited chan struct{}
}

// startBinary starts the binary with exactly env and waits until it is
// healthy; the test signs in to it (the session outlives restarts on the
// same address).
func startBinary(t *testing.T, bin string, env map[string]string) *binary {
	t.Helper()
	b := &binary{base: "http://" + env["LISTEN_ADDR"], logs: &syncBuffer{}, exited: make(chan struct{})}
	b.cmd = exec.Command(bin)
	b.cmd.Dir, b.cmd.Env = t.TempDir(), toolgateEnv(env)
	b.cmd.Stdout, b.cmd.Stderr = b.logs, b.logs
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = b.cmd.Wait(); close(b.exited) }()
	t.Cleanup(func() {
		_ = b.cmd.Process.Kill()
		<-b.exited
		if t.Failed() {
			t.Logf("toolgate (pid %d) logs:\n%s", b.cmd.Process.Pid, b.logs)
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get(b.base + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		select {
		case <-b.exited:
			t.Fatalf("toolgate exited early:\n%s", b.logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolgate not healthy in time:\n%s", b.logs)
		}
	}
	if _, ok := sessions.Load(b.base); !ok {
		signIn(t, b.base)
	}
	return b
}

// kill sends SIGKILL and waits for the process to be gone.
func (b *binary) kill(t *testing.T) {
	t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	b.waitDead(t, 10*time.Second)
}

func (b *binary) waitDead(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case <-b.exited:
	case <-time.After(limit):
		t.Fatalf("toolgate still runs after %s:\n%s", limit, b.logs)
	}
	if ws, ok := b.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("toolgate ended with %v, want SIGKILL:\n%s", b.cmd.ProcessState, b.logs)
	}
}

// stop ends the process with SIGTERM, as an operator would.
func (b *binary) stop(t *testing.T) {
	t.Helper()
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(20 * time.Second):
		t.Errorf("toolgate did not stop on SIGTERM:\n%s", b.logs)
	}
}

// provider is the emulator behind a tap: it keeps each request's body and
// can hold the next follow-up's answer before a chosen event, telling the
// test, until released (the emulator then goes on).
type provider struct {
	emu http.Handler

	mu      sync.Mutex
	bodies  [][]byte
	hold    func(passed []string, next string) bool
	held    chan struct{}
	release chan struct{}
}

// holdNext holds the next follow-up's answer where hold says (nil: not at
// all); the channel is closed once it is held.
func (p *provider) holdNext(hold func([]string, string) bool) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold, p.held, p.release = hold, make(chan struct{}), make(chan struct{})
	return p.held
}

// releaseAll lets a held answer go on.
func (p *provider) releaseAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.release != nil {
		close(p.release)
		p.release = nil
	}
}

// bodiesCopy is every request's body so far.
func (p *provider) bodiesCopy() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.bodies...)
}

// last is the body of the last request.
func (p *provider) last() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.bodies) == 0 {
		return nil
	}
	return p.bodies[len(p.bodies)-1]
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.mu.Lock()
		p.bodies = append(p.bodies, body)
		if p.hold != nil && bytes.Contains(body, []byte(`"mcp_approval_response"`)) {
			w = &holdingWriter{ResponseWriter: w, hold: p.hold, held: p.held, release: p.release}
			p.hold = nil
		}
		p.mu.Unlock()
	}
	p.emu.ServeHTTP(w, r)
}

// holdingWriter passes the stream's events on (the emulator writes one per
// Write) until hold says to stop before one; it then waits for release.
type holdingWriter struct {
	http.ResponseWriter
	hold    func(passed []string, next string) bool
	held    chan struct{}
	release chan struct{}
	passed  []string
	done    bool
}

func (w *holdingWriter) Write(b []byte) (int, error) {
	if name, ok := bytes.CutPrefix(b, []byte("event: ")); ok && !w.done {
		if i := bytes.IndexByte(name, '\n'); i >= 0 {
			next := string(name[:i])
			if w.hold(w.passed, next) {
				w.done = true
				close(w.held)
				<-w.release
			}
			w.passed = append(w.passed, next)
		}
	}
	return w.ResponseWriter.Write(b)
}

func (w *holdingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// liveSSE is an event stream read as it arrives.
type liveSSE struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	events []event
	more   chan struct{} // closed and replaced on each event, and at the end
	ended  bool
}

// openSSE posts body and reads the answer's events as they come, until the
// stream ends (or close).
func openSSE(t *testing.T, url, body string) *liveSSE {
	t.Helper()
	return openSSEWith(t, url, body, nil)
}

// openSSEWith is openSSE with more request headers.
func openSSEWith(t *testing.T, url, body string, headers map[string]string) *liveSSE {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &liveSSE{cancel: cancel, more: make(chan struct{})}
	t.Cleanup(s.close)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	withSession(req)
	go func() {
		defer s.add(event{}, true)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer res.Body.Close()
		for ev, err := range client.ReadEvents(res.Body) {
			if err != nil {
				return
			}
			s.add(event{name: ev.Name, data: string(ev.Data)}, false)
		}
	}()
	return s
}

func (s *liveSSE) add(ev event, end bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if end {
		s.ended = true
	} else {
		s.events = append(s.events, ev)
	}
	close(s.more)
	s.more = make(chan struct{})
}

// waitFor waits for an event that match accepts.
func (s *liveSSE) waitFor(t *testing.T, match func(event) bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		for _, ev := range s.events {
			if match(ev) {
				s.mu.Unlock()
				return
			}
		}
		more, ended, seen := s.more, s.ended, slices.Clone(s.events)
		s.mu.Unlock()
		if ended {
			t.Fatalf("the stream ended without the awaited event: %v", seen)
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("the awaited event did not come within 20s: %v", seen)
		}
	}
}

func (s *liveSSE) close() { s.cancel() }
