package engine_test

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
	"github.com/toolgate/toolgate/internal/conversation/recovery"
	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/emulator"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/responses"
	"github.com/toolgate/toolgate/internal/testdb"
)

// harness is the turn engine as it runs in Toolgate: real Postgres, the real
// policy service with the demo MCP server registered (and its tools
// discovered), and the OpenAI emulator as the model, reached through the
// real openai-go client (internal/responses) behind a tap that injects
// faults.
type harness struct {
	t       *testing.T
	pool    *pgxpool.Pool
	chat    *engine.Service
	hub     *eventlog.Hub                   // chat's event log and streams
	replica func(id string) *engine.Service // another replica on the same database
	// replicaOn is another replica reaching the database through pool,
	// with its own event log.
	replicaOn func(id string, pool *pgxpool.Pool) *engine.Service
	policies  *policysvc.Service
	up        *emuTap
	demo      *demomcp.Demo
	demoURL   string // the demo MCP server's endpoint
}

// engineOptions vary the engine under test.
type engineOptions struct {
	limits      conversation.Limits
	unreachable bool // the model's provider refuses connections
	// firstByte and idle are the client's UPSTREAM_FIRST_BYTE_TIMEOUT and
	// UPSTREAM_IDLE_TIMEOUT (0: none).
	firstByte, idle time.Duration
	maxTools        int // the client's bound on tools entries (0: responses.MaxTools)
	// health is the policy service's (zero: policy.DefaultHealthOptions).
	health policy.HealthOptions
}

func newEngine(t *testing.T, opts engineOptions) *harness {
	t.Helper()
	pool := testdb.New(t)
	for _, u := range []auth.User{ana, ben, admin} {
		if _, err := pool.Exec(t.Context(), `INSERT INTO users (id, email, role) VALUES ($1, $2, $3)`, u.ID, u.Email, u.Role); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.DiscardHandler)
	demoMCP := demomcp.New(demomcp.Options{})
	demo := httptest.NewServer(demoMCP.Handler())
	t.Cleanup(demo.Close)
	policies := policysvc.New(postgres.NewStore(pool), &mcpclient.Discoverer{Timeout: 5 * time.Second}, log, policy.Options{Health: opts.health})
	srv, err := policies.Servers.CreateServer(as(t.Context(), admin), policy.NewServer{Label: "demo", URL: demo.URL + "/mcp"})
	if err != nil || srv.RefreshError != "" || srv.ToolCount == 0 {
		t.Fatalf("registering the demo server: %v %q (%d tools)", err, srv.RefreshError, srv.ToolCount)
	}
	// Its read-only hints accepted, as the offline demo's are: the tests
	// count on get_forecast running unasked.
	trusted := policy.HintsTrusted
	if _, err := policies.Servers.UpdateServer(as(t.Context(), admin), "demo", policy.ServerPatch{ReadOnlyHints: &trusted}); err != nil {
		t.Fatal(err)
	}
	up := newEmuTap(t)
	base := up.url
	if opts.unreachable {
		base = closedURL(t)
	}
	client := responses.New(responses.Config{APIKey: "test-key", BaseURL: base + "/v1/", Model: "gpt-5-mini",
		Layout: responses.LayoutDefault, MaxRetries: 2, FirstByteTimeout: opts.firstByte, IdleTimeout: opts.idle, MaxTools: opts.maxTools, Logger: log})
	buildOn := func(id string, pool *pgxpool.Pool, events *eventlog.Hub) *engine.Service {
		return engine.New(postgres.NewConversationStore(pool), postgres.NewConversationPolicies(policies), client, log,
			engine.Options{Info: conversation.Info{Offline: true, Model: "gpt-5-mini"}, Limits: opts.limits, Replica: id, Events: events})
	}
	replica := func(id string) *engine.Service { return buildOn(id, pool, nil) }
	replicaOn := func(id string, p *pgxpool.Pool) *engine.Service { return buildOn(id, p, nil) }
	hub := eventlog.New(postgres.NewConversationStore(pool), eventlog.Options{})
	return &harness{t: t, pool: pool, chat: buildOn("rep_a", pool, hub), hub: hub, replica: replica, replicaOn: replicaOn,
		policies: policies, up: up, demo: demoMCP, demoURL: demo.URL + "/mcp"}
}

// closedURL is the URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// message starts a message turn as u.
func (e *harness) message(u auth.User, conv, input string) *engine.Turn {
	e.t.Helper()
	turn, err := e.chat.StartMessage(as(e.t.Context(), u), conv, input)
	if err != nil {
		e.t.Fatalf("StartMessage(%q, %q) as %s: %v", conv, input, u.Email, err)
	}
	return turn
}

// run runs turn as u to its end and returns what it sent.
func (e *harness) run(u auth.User, turn *engine.Turn) *recorder {
	e.t.Helper()
	rec := newRecorder()
	turn.Run(as(e.t.Context(), u), rec)
	return rec
}

// send starts a message turn as u, runs it and wants it completed.
func (e *harness) send(u auth.User, conv, input string) (string, *recorder) {
	e.t.Helper()
	turn := e.message(u, conv, input)
	rec := e.run(u, turn)
	if rec.last() != conversation.EventNameCompleted {
		e.t.Fatalf("turn %q ended with %v, want completed", input, rec.names())
	}
	return turn.ConversationID(), rec
}

// asking sends a message that makes the model ask to run delete_forecast
// and returns the conversation and the approval request.
func (e *harness) asking(u auth.User, conv string) (string, conversation.Approval) {
	e.t.Helper()
	conv, rec := e.send(u, conv, `delete_forecast {"city": "Berlin", "api_token": "tok-secret-123"}`)
	a, ok := rec.first(conversation.EventNameApproval).(conversation.Approval)
	if !ok {
		e.t.Fatalf("the model did not ask: %v", rec.names())
	}
	return conv, a
}

// decide starts the decision turn on one approval request as u.
func (e *harness) decide(u auth.User, conv, id string, approve bool) (*engine.Turn, error) {
	return e.chat.StartDecisions(as(e.t.Context(), u), conv, []conversation.Decision{{ApprovalRequestID: id, Approve: &approve}})
}

func (e *harness) transcript(u auth.User, conv string) conversation.Transcript {
	e.t.Helper()
	tr, err := e.chat.Book().Get(as(e.t.Context(), u), conv)
	if err != nil {
		e.t.Fatalf("Get(%q): %v", conv, err)
	}
	return tr
}

// recorder is a Sink that keeps a turn's events and can wait for one.
type recorder struct {
	mu     sync.Mutex
	events []recorded
	signal chan struct{} // closed and replaced on every event
}

type recorded struct {
	name string
	data any
}

func newRecorder() *recorder { return &recorder{signal: make(chan struct{})} }

func (r *recorder) Send(name string, data any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recorded{name, data})
	close(r.signal)
	r.signal = make(chan struct{})
}

// waitFor waits until an event name was sent, or fails the test.
func (r *recorder) waitFor(t *testing.T, name string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		for _, ev := range r.events {
			if ev.name == name {
				r.mu.Unlock()
				return
			}
		}
		signal := r.signal
		r.mu.Unlock()
		select {
		case <-signal:
		case <-deadline:
			t.Fatalf("no %s event within 20s; got %v", name, r.names())
		}
	}
}

func (r *recorder) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.events))
	for i, ev := range r.events {
		out[i] = ev.name
	}
	return out
}

func (r *recorder) last() string {
	n := r.names()
	if len(n) == 0 {
		return ""
	}
	return n[len(n)-1]
}

func (r *recorder) lastData() any {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.events) == 0 {
		return nil
	}
	return r.events[len(r.events)-1].data
}

func (r *recorder) first(name string) any {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.events {
		if ev.name == name {
			return ev.data
		}
	}
	return nil
}

func (r *recorder) count(name string) int {
	n := 0
	for _, x := range r.names() {
		if x == name {
			n++
		}
	}
	return n
}

// emuTap is the OpenAI emulator behind a tap that counts requests and can
// add a behavior (a fault) to them, end streams early, or forget every
// stored response.
type emuTap struct {
	url string

	mu       sync.Mutex
	emu      *emulator.Server
	behavior string
	endAfter int // > 0: end each stream cleanly after this many events
	requests int // POST /v1/responses received

	bodies [][]byte // their bodies, in order
	// wrap, when set, stands between the emulator and each POST
	// /v1/responses answer; after, when not nil, runs once the emulator
	// is done with the request, before the connection ends.
	wrap func(w http.ResponseWriter, r *http.Request) (_ http.ResponseWriter, after func())
}

func newEmuTap(t *testing.T) *emuTap {
	t.Helper()
	tap := &emuTap{}
	tap.replace(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tap.mu.Lock()
		h, endAfter, wrap := tap.emu.Handler(), tap.endAfter, tap.wrap
		post := r.Method == http.MethodPost && r.URL.Path == "/v1/responses"
		if post {
			tap.requests++
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			tap.bodies = append(tap.bodies, body)
			if tap.behavior != "" {
				r.Header.Set(emulator.BehaviorHeader, tap.behavior)
			}
		}
		tap.mu.Unlock()
		if endAfter > 0 {
			w = &eventLimit{ResponseWriter: w, left: endAfter}
		}
		var after func()
		if wrap != nil && post {
			w, after = wrap(w, r)
		}
		h.ServeHTTP(w, r)
		if after != nil {
			after()
		}
	}))
	t.Cleanup(srv.Close)
	tap.url = srv.URL
	return tap
}

// setBehavior applies an emulator behavior to every following request.
func (u *emuTap) setBehavior(b string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.behavior = b
}

// endStreamsAfter ends every following stream cleanly after n events,
// without the terminal one.
func (u *emuTap) endStreamsAfter(n int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.endAfter = n
}

// replace puts a fresh emulator behind the tap: a provider that has
// forgotten every response.
func (u *emuTap) replace(t *testing.T) {
	t.Helper()
	emu, err := emulator.New(emulator.Config{})
	if err != nil {
		t.Fatal(err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.emu = emu
}

// sent returns the bodies of the requests received so far, in order.
func (u *emuTap) sent() [][]byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.bodies)
}

func (u *emuTap) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests
}

// eventLimit passes on the first left server-sent events of a stream and
// drops the rest, so the stream ends cleanly where no event says it ended.
type eventLimit struct {
	http.ResponseWriter
	left int
}

func (w *eventLimit) Write(p []byte) (int, error) {
	n := len(p)
	var keep []byte
	for w.left > 0 && len(p) > 0 {
		i := bytes.Index(p, []byte("\n\n"))
		if i < 0 {
			keep = append(keep, p...)
			break
		}
		keep, p = append(keep, p[:i+2]...), p[i+2:]
		w.left--
	}
	if len(keep) > 0 {
		if _, err := w.ResponseWriter.Write(keep); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func (w *eventLimit) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// janitor is the recovery that runs beside s (cmd/api builds it so).
func (e *harness) janitor(s *engine.Service) *recovery.Janitor {
	return recovery.New(postgres.NewConversationStore(e.pool), s.Turns(), slog.New(slog.DiscardHandler), recovery.Options{Keeper: s.Keeper()})
}
