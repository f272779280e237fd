// Package http is Toolgate's HTTP API: Echo routes, handlers, JSON binding
// and the one table that maps domain errors to statuses. It is the only
// package that imports Echo.
package http

import (
	"cmp"
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/toolgate/toolgate/internal/approvallink"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/conversation/inbox"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/policy/changefeed"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
	"github.com/toolgate/toolgate/internal/webhook"
)

// Pinger reports whether the database answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Server is the HTTP API.
type Server struct {
	echo         *echo.Echo
	policies     *policysvc.Service
	chat         *engine.Service
	db           Pinger
	log          *slog.Logger
	maxBodyBytes int64
	heartbeat    time.Duration
	// streamWriteTimeout drops a client that stops reading a stream.
	streamWriteTimeout time.Duration
	web                fs.FS  // the built web app; nil: not built
	webDir             string // WEB_DIR, where it was looked for ("": the app embedded in the binary), for the "not built" page
	version            string // Toolgate's version, for GET /api/info

	allowedHosts []string                    // ALLOWED_HOSTS, normalized (guard.go)
	crossOrigin  *http.CrossOriginProtection // refuses state changes from other origins (guard.go)

	auth       *auth.Service // who is calling (auth.go)
	trustProxy bool          // TRUST_PROXY_HEADERS: X-Forwarded-For/-Proto are the client's

	metrics      *metrics.Metrics // nil: nothing is counted (metrics.go)
	metricsToken string           // METRICS_TOKEN: GET /metrics needs it ("": /metrics is off)

	idem IdempotencyStore // Idempotency-Key on the chat routes (idempotency.go); nil: the header is ignored

	webhooks *webhook.Service // outbound webhooks (webhooks.go); nil: the routes answer 404

	mcpFace   http.Handler // the MCP face at /mcp/:label (mcpface.go); nil: 404
	agentFace http.Handler // the agent face at /mcp and /mcp/:label; nil: 404

	links *approvallink.Service // signed approval links (approvallinks.go); nil: 404

	changes *changefeed.Hub // what GET /api/settings/events follows (settingsevents.go)

	inbox    *inbox.Service // what waits for each person (inbox.go); nil: the routes answer 503
	inboxHub *inbox.Hub     // what GET /api/approvals/events follows

	// closing ends the streams that follow a conversation (they run no
	// turn) when CloseStreams is called at shutdown (sse.go).
	closing      context.Context
	closeStreams context.CancelFunc
}

// Options are the API's limits.
type Options struct {
	MaxBodyBytes int64         // limit on a request body
	Heartbeat    time.Duration // interval of SSE heartbeat comments (at most 15 s)
	// StreamWriteTimeout is how long one write to a stream may take before
	// the client is dropped (it stopped reading; it resumes with
	// Last-Event-ID): at least half of it, at most all of it (the
	// deadline moves only once half is spent). Default 2 s: the turn
	// writes the streams on its replica itself, so this is also the most
	// a client that stopped reading holds up a turn, once.
	StreamWriteTimeout time.Duration
	// WebDir (WEB_DIR) is a built web app on disk served at /; when set it
	// overrides Web. Without an index.html there, / answers a page saying
	// how to build the app.
	WebDir string
	// Web is the web app embedded in the binary (frontend.App()), served at
	// / when WebDir is ""; nil (a binary built without it): a page saying
	// how to build the binary with it.
	Web          fs.FS
	Version      string   // Toolgate's version, reported by GET /api/info ("": "dev")
	AllowedHosts []string // ALLOWED_HOSTS: the Host names answered (nil: DefaultAllowedHosts)
	// TrustProxyHeaders (TRUST_PROXY_HEADERS): take the client address from
	// X-Forwarded-For and https from X-Forwarded-Proto.
	TrustProxyHeaders bool
	// Idempotency keeps the Idempotency-Key of the chat routes
	// (idempotencydb.New); nil: the header is ignored.
	Idempotency IdempotencyStore
	// Metrics counts requests, streams and turns (nil: nothing is counted);
	// GET /metrics serves them to a caller with MetricsToken (METRICS_TOKEN;
	// "": /metrics answers 404).
	Metrics      *metrics.Metrics
	MetricsToken string
	// Webhooks manages outbound webhooks (nil: /api/webhooks answers 404).
	Webhooks *webhook.Service
	// MCPFace serves /mcp/{server_label} (gateway.NewFace): machine
	// requests authenticated by a capability token only. nil: /mcp/
	// answers 404 saying the face is off.
	MCPFace http.Handler
	// AgentFace serves /mcp and /mcp/{server_label} to a person's own MCP
	// clients with their API token (gateway.NewAgentFace). nil: 404.
	AgentFace http.Handler
	// ApprovalLinks shows and redeems the signed approve and deny links of
	// webhook deliveries (nil: their routes answer 404).
	ApprovalLinks *approvallink.Service
	// SettingsChanges are the settings changes this replica hears of
	// (cmd/api feeds it the Postgres notifications); GET
	// /api/settings/events follows it. nil: a hub nothing feeds (the
	// stream only sends heartbeats).
	SettingsChanges *changefeed.Hub
	// Inbox reads what waits for each person across their chats and
	// agents (postgres.NewInboxStore); nil: the /api/approvals routes but
	// stats answer 503 inbox_unavailable.
	Inbox inbox.Store
	// InboxChanges wakes the inbox streams (GET /api/approvals/events);
	// cmd/api feeds it the Postgres notifications. nil: a hub nothing
	// feeds (the stream then only looks again when a request runs out of
	// time).
	InboxChanges *inbox.Hub
	// HeldDecider decides an agent's held calls from the inbox
	// (agentgate); nil: such a decision answers 503 held_calls_unavailable.
	HeldDecider conversation.HeldDecider
}

// NewServer returns the API with every dependency explicit.
func NewServer(log *slog.Logger, policies *policysvc.Service, chat *engine.Service, authn *auth.Service, db Pinger, opts Options) *Server {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	if opts.Heartbeat <= 0 || opts.Heartbeat > 15*time.Second {
		opts.Heartbeat = 15 * time.Second
	}
	if opts.StreamWriteTimeout <= 0 {
		opts.StreamWriteTimeout = 2 * time.Second
	}
	s := &Server{echo: e, policies: policies, chat: chat, db: db, log: log, maxBodyBytes: opts.MaxBodyBytes, heartbeat: opts.Heartbeat, streamWriteTimeout: opts.StreamWriteTimeout,
		webDir: opts.WebDir, version: cmp.Or(opts.Version, "dev")}
	s.closing, s.closeStreams = context.WithCancel(context.Background())
	switch {
	case opts.WebDir != "":
		if st, err := os.Stat(filepath.Join(opts.WebDir, "index.html")); err == nil && !st.IsDir() {
			s.web = os.DirFS(opts.WebDir)
		} else {
			log.Warn("web app not built: / explains how to build it", "web_dir", opts.WebDir)
		}
	case opts.Web != nil:
		if st, err := fs.Stat(opts.Web, "index.html"); err == nil && !st.IsDir() {
			s.web = opts.Web
		} else {
			log.Warn("the web app embedded in this binary has no index.html: / explains how to build it")
		}
	default:
		log.Warn("this binary was built without the web app and WEB_DIR is not set: / explains how to build it")
	}
	s.allowedHosts = make([]string, 0, len(opts.AllowedHosts))
	for _, h := range cmpOr(opts.AllowedHosts, DefaultAllowedHosts) {
		s.allowedHosts = append(s.allowedHosts, normalizeHost(h))
	}
	s.crossOrigin = http.NewCrossOriginProtection()
	s.auth, s.trustProxy = authn, opts.TrustProxyHeaders
	s.idem = opts.Idempotency
	s.webhooks = opts.Webhooks
	s.mcpFace = opts.MCPFace
	s.agentFace = opts.AgentFace
	s.links = opts.ApprovalLinks
	s.changes = opts.SettingsChanges
	if s.changes == nil {
		s.changes = changefeed.New()
	}
	s.metrics, s.metricsToken = opts.Metrics, opts.MetricsToken
	if opts.Inbox != nil {
		s.inbox = inbox.New(opts.Inbox, chat.Book(), chat, inbox.Options{Held: opts.HeldDecider, Observer: s.observe(nil)})
		if s.links != nil {
			// A link decides as the inbox does: a chat's request or an
			// agent's held call alike.
			s.links.UseDecider(linkDecider{s.inbox})
		}
		s.inboxHub = opts.InboxChanges
		if s.inboxHub == nil {
			s.inboxHub = inbox.NewHub(opts.Inbox, log)
		}
	}
	// The client address keys the sign-in rate limit: a header only when a
	// proxy we trust sets it.
	e.IPExtractor = echo.ExtractIPDirect()
	if opts.TrustProxyHeaders {
		e.IPExtractor = echo.ExtractIPFromXFFHeader()
	}
	e.HTTPErrorHandler = s.handleError
	// Before routing, so that the guard also covers unknown paths and the
	// web app: request id, metrics (metrics.go), log, recover, then the
	// guard (guard.go).
	e.Pre(middleware.RequestID())
	e.Pre(s.observeRequests)
	e.Pre(s.logRequests)
	e.Pre(middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true, LogLevel: 0,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.log.Error("panic", "error", err, "stack", string(stack), "request_id", requestID(c))
			return err
		}}))
	e.Pre(s.guard)
	e.Use(s.authenticate)
	s.routes()
	return s
}

// ServeHTTP makes Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

// Routes lists every method and path served, in Echo's :param form.
func (s *Server) Routes() []*echo.Route { return s.echo.Routes() }

func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		// Logged in a frame of its own: a stream waits below this one
		// (see idempotent).
		s.logRequest(c, start, next(c))
		return nil
	}
}

// logRequest answers err, if any, and logs the request.
func (s *Server) logRequest(c echo.Context, start time.Time, err error) {
	attrs := make([]slog.Attr, 0, 6)
	if err != nil {
		c.Error(err) // writes the response, so the status below is final
		e, _ := toAppError(err)
		attrs = append(attrs, slog.String("error_code", e.Code))
	}
	status := c.Response().Status
	level := slog.LevelInfo
	switch {
	case status >= 500:
		level = slog.LevelError
	case status >= 400:
		level = slog.LevelWarn
	}
	attrs = append(attrs, slog.String("method", c.Request().Method), slog.String("path", c.Request().URL.Path),
		slog.Int("status", status), slog.Duration("duration", time.Since(start)),
		slog.String("request_id", requestID(c)))
	s.log.LogAttrs(c.Request().Context(), level, "request", slog.Attr{Key: "http", Value: slog.GroupValue(attrs...)})
}

func requestID(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}

// linkDecider is the inbox's decision as a signed link's Decider.
type linkDecider struct{ inbox *inbox.Service }

func (d linkDecider) Decide(ctx context.Context, dec conversation.Decision) (conversation.Approval, error) {
	return d.inbox.DecideOne(ctx, dec)
}
