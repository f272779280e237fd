package http_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/callgate"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
	"github.com/toolgate/toolgate/internal/conversation/inbox"
	"github.com/toolgate/toolgate/internal/conversation/recovery"
	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/gateway"
	toolhttp "github.com/toolgate/toolgate/internal/http"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/changefeed"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/postgres/authdb"
	"github.com/toolgate/toolgate/internal/postgres/idempotencydb"
	"github.com/toolgate/toolgate/internal/postgres/notify"
	"github.com/toolgate/toolgate/internal/postgres/webhookdb"
	"github.com/toolgate/toolgate/internal/responses"
	"github.com/toolgate/toolgate/internal/testdb"
	"github.com/toolgate/toolgate/internal/webhook"
)

// apiEnv is the real API over real HTTP on a database of its own, with the
// demo MCP server beside it and the OpenAI emulator as its model, reached
// through the real openai-go client.
type apiEnv struct {
	t       testing.TB
	url     string
	pool    *pgxpool.Pool
	demo    *demomcp.Demo
	demoURL string // the demo's MCP endpoint
	api     *toolhttp.Server
	chat    *engine.Service
	up      *upstreamTap
	opts    envOptions
	log     *slog.Logger
	auth    *auth.Service
	admin   auth.User // the admin created with the env
	token   string    // the bearer token every request helper sends ("" sends none)
	hooks   *webhookdb.Store
	// gateway mode (envOptions.gateway): the capability tokens and what
	// reached the face.
	tokens   *gateway.Tokens
	faceHits *faceHits
	// listening is closed once the notification listener is connected (a
	// change committed before may go unheard).
	listening <-chan struct{}
}

// envOptions vary the API under test.
type envOptions struct {
	layout     string                   // MCP_TOOL_LAYOUT
	heartbeat  time.Duration            // SSE_HEARTBEAT
	retries    int                      // OPENAI_MAX_RETRIES
	webDir     string                   // WEB_DIR
	web        fs.FS                    // the web app embedded in the binary (frontend.App())
	version    string                   // the binary's version
	limits     conversation.Limits      // USER_MAX_CONCURRENT_TURNS, USER_MESSAGES_PER_MINUTE (zero: none)
	authMode   auth.Mode                // AUTH_MODE ("": local)
	trustProxy bool                     // TRUST_PROXY_HEADERS
	metrics    *metrics.Metrics         // the server's metrics (nil: none)
	metricsTok string                   // METRICS_TOKEN
	leaseTTL   time.Duration            // TURN_LEASE_TTL (0: the default)
	writeLimit time.Duration            // Options.StreamWriteTimeout (0: the default)
	statements *testdb.Statements       // sees every statement the pool sends (nil: none)
	face       *responses.Face          // MCP_ROUTE=gateway: tool entries point at this face (nil: direct)
	held       conversation.HeldDecider // decides agents' held calls from the inbox (nil: 503)

	// mcpFace builds Options.MCPFace over the API's servers (nil: the face is off).
	mcpFace func(*policysvc.Service) http.Handler
	// gateway runs MCP_ROUTE=gateway as cmd/api wires it: the tool entries
	// name this API's own face (/mcp/{label}) with capability tokens, the
	// face asks the real gate (callgate.Gate), and approvals are
	// settled from its records. definitionMaxAge is MCP_DEFINITION_MAX_AGE
	// (0: list at every call).
	gateway bool
	// direct turns listing before each request on (direct mode; nil: off).
	direct           *directMode
	definitionMaxAge time.Duration
}

// faceHits counts the requests that reached the MCP face, by server label.
type faceHits struct {
	mu   sync.Mutex
	hits map[string]int
}

func (f *faceHits) count(label string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[label]
}

func (f *faceHits) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if label, ok := strings.CutPrefix(r.URL.Path, "/mcp/"); ok {
			f.mu.Lock()
			f.hits[label]++
			f.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

const demoToken = "demo-secret-token-0123456789"

func newAPI(t testing.TB) *apiEnv {
	return newAPIWith(t, envOptions{})
}

func newAPIWith(t testing.TB, opts envOptions) *apiEnv {
	t.Helper()
	var pool *pgxpool.Pool
	if opts.statements != nil {
		pool = testdb.NewTraced(t, opts.statements)
	} else {
		pool = testdb.New(t)
	}
	demo := demomcp.New(demomcp.Options{})
	demoSrv := httptest.NewServer(demo.Handler())
	t.Cleanup(demoSrv.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	e := &apiEnv{t: t, pool: pool, demo: demo, demoURL: demoSrv.URL + "/mcp", up: newUpstreamTap(t), opts: opts, log: log}
	e.start()
	// Every request helper signs in as this admin with a personal token;
	// newUser gives another user's view of the same server.
	admin, created, err := e.auth.Accounts.EnsureAdmin(context.Background(), "admin@toolgate.test", "")
	if err == nil && !created { // AUTH_MODE=none made its built-in admin first
		admin, err = e.auth.Accounts.OldestActiveAdmin(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	tok, err := e.auth.APITokens.CreateToken(auth.WithUser(context.Background(), admin), "tests")
	if err != nil {
		t.Fatal(err)
	}
	e.admin, e.token = admin, tok.Secret
	return e
}

var userSeq, replicaSeq atomic.Int64

// newUser creates a user with role and returns a shallow copy of the env
// whose requests carry that user's token (same server, same database).
func (e *apiEnv) newUser(role auth.Role) (*apiEnv, auth.User) {
	e.t.Helper()
	ctx := auth.WithUser(context.Background(), e.admin)
	u, err := e.auth.Accounts.CreateUser(ctx, auth.NewUser{Email: fmt.Sprintf("user%d@toolgate.test", userSeq.Add(1)),
		Password: "correct horse battery", Role: role})
	if err != nil {
		e.t.Fatal(err)
	}
	tok, err := e.auth.APITokens.CreateToken(auth.WithUser(context.Background(), u), "tests")
	if err != nil {
		e.t.Fatal(err)
	}
	c := *e
	c.token = tok.Secret
	return &c, u
}

func (e *apiEnv) mcpFace(svc *policysvc.Service) http.Handler {
	if e.opts.mcpFace == nil {
		return nil
	}
	return e.opts.mcpFace(svc)
}

// anon returns a shallow copy of the env whose requests carry no credentials.
func (e *apiEnv) anon() *apiEnv {
	c := *e
	c.token = ""
	return &c
}

// start builds the API's services and serves them on a new port: called
// again, it is a restart on the same database, emulator and demo server.
func (e *apiEnv) start() {
	e.t.Helper()
	store := postgres.NewStore(e.pool)
	svc := policysvc.New(store, &mcpclient.Discoverer{Timeout: 3e9}, e.log, policy.Options{})
	if e.opts.layout == "" {
		e.opts.layout = "default"
	}
	if e.opts.retries == 0 {
		e.opts.retries = 2
	}
	face := e.opts.face
	if e.opts.gateway {
		if e.tokens == nil {
			key := make([]byte, 32)
			_, _ = rand.Read(key)
			e.tokens, e.faceHits = gateway.NewTokens(key), &faceHits{hits: map[string]int{}}
		}
		face = &responses.Face{Tokens: e.tokens, TTL: 2 * time.Minute} // BaseURL: once listening
	}
	up := responses.New(responses.Config{APIKey: "test-key", BaseURL: e.up.url + "/v1/", Model: "gpt-5-mini",
		Layout: responses.Layout(e.opts.layout), MaxRetries: e.opts.retries, Logger: e.log, Face: face})
	hub := eventlog.New(postgres.NewConversationStore(e.pool), eventlog.Options{})
	e.chat = engine.New(postgres.NewConversationStore(e.pool), postgres.NewConversationPolicies(svc), up, e.log,
		engine.Options{Info: conversation.Info{Offline: true, Model: "gpt-5-mini", Layout: e.opts.layout}, Limits: e.opts.limits,
			Replica: fmt.Sprintf("rep_test_%d", replicaSeq.Add(1)), LeaseTTL: e.opts.leaseTTL, Gateway: e.opts.gateway, Prelist: e.prelist(),
			Events: hub})
	// As cmd/api wires it: notifications from every replica on the database.
	lctx, stop := context.WithCancel(context.Background())
	e.t.Cleanup(stop)
	chat := e.chat
	changes := changefeed.New()
	inboxHub := inbox.NewHub(postgres.NewInboxStore(e.pool), e.log)
	connected := make(chan struct{})
	var once sync.Once
	listener := notify.NewListener(e.pool, e.log, notify.Funcs{
		Notify: func(channel string, payload []byte) {
			if ch, ok := postgres.SettingsChange(channel, payload); ok {
				changes.Publish(ch)
				return
			}
			if channel == conversation.ChannelSignals {
				chat.OnSignal(payload)
				inboxHub.OnSignal(payload)
				return
			}
			hub.OnEventsNotification(payload)
			inboxHub.OnEventsNotification(payload)
		},
		Connect: func() {
			hub.OnReconnect()
			inboxHub.WakeAll()
			changes.Publish(policy.Change{Kind: policy.ChangeResync})
			once.Do(func() { close(connected) })
		}})
	e.listening = connected
	go listener.Run(lctx, conversation.ChannelEvents, conversation.ChannelSignals, postgres.PolicyChannel, postgres.SettingsChannel)
	janitor := recovery.New(postgres.NewConversationStore(e.pool), e.chat.Turns(), e.log, recovery.Options{Keeper: e.chat.Keeper()})
	if err := janitor.Recover(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	janitor.Start(lctx)
	e.auth = auth.New(authdb.Stores(e.pool), auth.Options{Mode: e.opts.authMode}, e.log)
	// Webhook URLs may be on this machine (the tests' receivers), not on
	// private networks.
	guard, err := netguard.New(netguard.Config{AllowedHosts: "127.0.0.1"})
	if err != nil {
		e.t.Fatal(err)
	}
	e.hooks = webhookdb.New(e.pool)
	mcpFace := e.mcpFace(svc)
	if e.opts.gateway {
		caller := &mcpclient.Caller{CallTimeout: 10 * time.Second}
		e.t.Cleanup(caller.Close)
		mcpFace = gateway.NewFace(gateway.FaceOptions{Tokens: e.tokens, Gate: callgate.New(e.chat.Keeper()), Servers: svc.Servers,
			Upstream: caller, DefinitionMaxAge: e.opts.definitionMaxAge, Logger: e.log}) // 0: list at every call
	}
	e.api = toolhttp.NewServer(e.log, svc, e.chat, e.auth, store, toolhttp.Options{MaxBodyBytes: 64 << 10, Heartbeat: e.opts.heartbeat, WebDir: e.opts.webDir,
		Web: e.opts.web, Version: e.opts.version, TrustProxyHeaders: e.opts.trustProxy,
		Metrics: e.opts.metrics, MetricsToken: e.opts.metricsTok, Idempotency: idempotencydb.New(e.pool),
		StreamWriteTimeout: e.opts.writeLimit, Webhooks: webhook.NewService(e.hooks, guard, e.log, nil), MCPFace: mcpFace,
		SettingsChanges: changes, Inbox: postgres.NewInboxStore(e.pool), InboxChanges: inboxHub, HeldDecider: e.opts.held,
		ApprovalLinks: approvalLinks(e.pool, e.chat, e.log)})
	if e.opts.authMode == auth.ModeNone {
		if _, err := e.auth.SignIn.EnsureLocalUser(context.Background()); err != nil {
			e.t.Fatal(err)
		}
	}
	var srv *httptest.Server
	if e.opts.gateway {
		srv = httptest.NewServer(e.faceHits.wrap(e.api))
		face.BaseURL = srv.URL
	}
	if srv == nil {
		srv = httptest.NewServer(e.api)
	}
	e.t.Cleanup(srv.Close)
	e.url = srv.URL
	specWatch(e.t, e.url) // every answer is checked against docs/openapi.yaml
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// call sends body (a string is sent as is, anything else as JSON).
// The answer is checked against docs/openapi.yaml (spec_test.go).
func (e *apiEnv) call(method, path string, body any) response {
	e.t.Helper()
	specWatch(e.t, e.url) // also for an env built by hand
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, e.url+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: raw}
}

// must calls and fails the test unless the status is want; it decodes the
// body into out when out is not nil.
func (e *apiEnv) must(want int, method, path string, body, out any) response {
	e.t.Helper()
	res := e.call(method, path, body)
	if res.status != want {
		e.t.Fatalf("%s %s: status %d, want %d; body: %s", method, path, res.status, want, res.body)
	}
	if out != nil {
		if err := json.Unmarshal(res.body, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, res.body, err)
		}
	}
	return res
}

type apiError struct {
	Error struct {
		Code    string            `json:"code"`
		Message string            `json:"message"`
		Fields  map[string]string `json:"fields"`
	} `json:"error"`
}

// createDemo registers the demo MCP server under label.
func (e *apiEnv) createDemo(label string) server {
	e.t.Helper()
	var s server
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": label, "url": e.demoURL}, &s)
	e.trustHints(label)
	return s
}

// trustHints accepts a server's read-only hints, as the offline demo's are
// at start, without an audit entry (the tests that follow count on
// get_forecast running unasked, and some count audit entries); the API's
// own PATCH is tested in readonlyhints_test.go.
func (e *apiEnv) trustHints(label string) {
	e.t.Helper()
	if _, err := e.pool.Exec(context.Background(), `UPDATE mcp_servers SET read_only_hints = 'trusted' WHERE label = $1`, label); err != nil {
		e.t.Fatal(err)
	}
}

// server mirrors the API's server JSON.
type server struct {
	Label             string            `json:"label"`
	URL               string            `json:"url"`
	Description       string            `json:"description"`
	Headers           map[string]string `json:"headers"`
	DefaultPolicy     *string           `json:"default_policy"`
	Enabled           bool              `json:"enabled"`
	ToolsRefreshedAt  *string           `json:"tools_refreshed_at"`
	ToolsRefreshError *string           `json:"tools_refresh_error"`
	ToolCount         int               `json:"tool_count"`
}

// tool mirrors the API's tool JSON.
type tool struct {
	ServerLabel     string          `json:"server_label"`
	Name            string          `json:"name"`
	Title           string          `json:"title"`
	Description     string          `json:"description"`
	InputSchema     json.RawMessage `json:"input_schema"`
	Annotations     map[string]any  `json:"annotations"`
	Digest          string          `json:"digest"`
	Discovered      bool            `json:"discovered"`
	Policy          *string         `json:"policy"`
	EffectivePolicy string          `json:"effective_policy"`
	PolicySource    string          `json:"policy_source"`
	PolicyUpdatedBy *string         `json:"policy_updated_by"`
	// Policy layers (policy-layers helper).
	PolicyLocked bool          `json:"policy_locked"`
	UserPolicy   *string       `json:"user_policy"`
	Locked       bool          `json:"locked"`
	AsksBecause  *asksBecause  `json:"asks_because"`
	Changed      *changedSince `json:"changed"`
	FirstSeenAt  *string       `json:"first_seen_at"`
	ChangedAt    *string       `json:"definition_changed_at"`
}

type asksBecause struct {
	Reason string   `json:"reason"`
	Fields []string `json:"fields"`
}

type changedSince struct {
	Fields []string `json:"fields"`
	Since  *string  `json:"since"`
}

func (e *apiEnv) tools(label string) map[string]tool {
	e.t.Helper()
	var out struct{ Tools []tool }
	e.must(200, "GET", "/api/mcp/servers/"+label+"/tools", nil, &out)
	m := map[string]tool{}
	for _, t := range out.Tools {
		m[t.Name] = t
	}
	return m
}

type auditEntry struct {
	ID          int64           `json:"id"`
	Actor       string          `json:"actor"`
	ActorID     string          `json:"actor_id"`
	Action      string          `json:"action"`
	ServerLabel *string         `json:"server_label"`
	ToolName    *string         `json:"tool_name"`
	Before      json.RawMessage `json:"before"`
	After       json.RawMessage `json:"after"`
}

type auditPage struct {
	Entries    []auditEntry `json:"entries"`
	NextCursor *string      `json:"next_cursor"`
}

func (e *apiEnv) audit() []auditEntry {
	e.t.Helper()
	var p auditPage
	e.must(200, "GET", "/api/audit?limit=500", nil, &p)
	return p.Entries
}

// startDemo starts another demo MCP server that requires token (if set) and
// returns its MCP endpoint.
func startDemo(t *testing.T, token string) string {
	t.Helper()
	srv := httptest.NewServer(demomcp.New(demomcp.Options{Token: token}).Handler())
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
