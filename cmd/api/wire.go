package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolgate/toolgate/frontend"

	"github.com/toolgate/toolgate/internal/approvallink"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/callgate"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
	"github.com/toolgate/toolgate/internal/conversation/inbox"
	"github.com/toolgate/toolgate/internal/conversation/prelist"
	"github.com/toolgate/toolgate/internal/conversation/recovery"
	"github.com/toolgate/toolgate/internal/gateway"
	toolhttp "github.com/toolgate/toolgate/internal/http"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/changefeed"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/postgres/authdb"
	"github.com/toolgate/toolgate/internal/postgres/idempotencydb"
	"github.com/toolgate/toolgate/internal/postgres/linkdb"
	"github.com/toolgate/toolgate/internal/postgres/notify"
	"github.com/toolgate/toolgate/internal/postgres/webhookdb"
	"github.com/toolgate/toolgate/internal/responses"
	"github.com/toolgate/toolgate/internal/webhook"
)

// The steps of build after the database and the policies (app.go).

func (a *app) buildUpstream(ctx context.Context) error {
	cfg := a.cfg
	a.info = conversation.Info{Offline: cfg.Offline(), Model: cfg.OpenAIModel, Layout: cfg.ToolLayout, BaseURL: cfg.OpenAIBaseURL}
	a.upCfg = responses.Config{APIKey: cfg.OpenAIAPIKey, BaseURL: cfg.OpenAIBaseURL, Model: cfg.OpenAIModel,
		Layout: responses.Layout(cfg.ToolLayout), MaxRetries: cfg.OpenAIMaxRetries,
		FirstByteTimeout: cfg.Upstream.FirstByteTimeout, IdleTimeout: cfg.Upstream.IdleTimeout, Logger: a.log,
		MaxTools: cfg.Upstream.MaxToolEntries,
		Transport: responses.Transport{MaxIdleConnsPerHost: cfg.Upstream.MaxIdleConns, MaxConnsPerHost: cfg.Upstream.MaxConnsPerHost,
			IdleConnTimeout: cfg.Upstream.IdleConnTimeout},
		Face: newFace(cfg, a.tokens)} // nil in direct mode (MCP_ROUTE)
	if !cfg.Offline() {
		if a.info.BaseURL == "" {
			a.info.BaseURL = "https://api.openai.com/v1/"
		}
		return nil
	}
	off, err := startOffline(cfg, a.log)
	if err != nil {
		return err
	}
	a.onClose(func() { off.close(context.WithoutCancel(ctx)) })
	a.upCfg.APIKey, a.upCfg.BaseURL, a.info.BaseURL = "offline", off.baseURL, off.baseURL
	if off.demoURL != "" {
		if err := registerDemo(auth.WithUser(ctx, auth.System), a.policies, off.demoURL); err != nil {
			return fmt.Errorf("register the demo MCP server: %w", err)
		}
	}
	a.log.Warn("OFFLINE: no OPENAI_API_KEY is set, so Toolgate talks to its built-in OpenAI Responses emulator, not a real model",
		"emulator", off.baseURL, "demo_mcp_server", off.demoURL, "demo_label", DemoLabel)
	return nil
}

// startRechecks checks unreachable MCP servers again in the background, so
// one that comes back is offered again without anyone pressing Refresh.
func (a *app) startRechecks(ctx context.Context) error {
	rechecks, stopRechecks := context.WithCancel(ctx)
	rechecked := make(chan struct{})
	go func() { defer close(rechecked); a.policies.Health.RunRechecks(rechecks, a.cfg.HealthRecheck) }()
	a.onClose(func() { stopRechecks(); <-rechecked })
	return nil
}

func (a *app) buildChat(ctx context.Context) error {
	cfg := a.cfg
	// Streamed text is stored on connections of its own (2 more per replica).
	eventStore, closeEventStore, err := postgres.NewEventWriterStore(ctx, a.pool)
	if err != nil {
		return err
	}
	a.onClose(closeEventStore)
	a.mets = newMetrics(a.build, a.pool)
	store := postgres.NewConversationStore(a.pool)
	a.events = eventlog.New(store, eventlog.Options{EventStore: eventStore, Observer: a.mets})
	ttl := cfg.ApprovalTTL
	opts := engine.Options{Info: a.info,
		Limits:  conversation.Limits{MaxConcurrentTurns: cfg.UserMaxConcurrentTurns, MessagesPerMinute: cfg.UserMessagesPerMinute},
		Replica: cfg.Replica.ID, LeaseTTL: cfg.Replica.LeaseTTL, ApprovalTTL: &ttl,
		// Gateway mode: whether an approved call ran is known from the
		// face's records (not_run, outcome_unknown only for a crash in between).
		Gateway: cfg.Route.Gateway(), Events: a.events, Observer: a.mets}
	// Direct mode: the provider calls the MCP servers itself, so what would
	// run unasked is listed first (docs/mcp-servers.md, "Direct mode"). In gateway mode
	// (MCP_ROUTE=gateway) this stays off: every call is checked at the face.
	if !cfg.Route.Gateway() {
		d := cfg.Discovery
		opts.Prelist = &prelist.Options{Lister: a.discoverer, Recorder: a.policies.Servers, MaxAge: d.PrelistMaxAge, TimeLimit: d.PrelistTimeLimit}
	}
	a.chat = engine.New(store, postgres.NewConversationPolicies(a.policies),
		responses.New(a.upCfg), a.log, opts)
	// Recovery runs beside the engine: leases, the sweep, expiry.
	a.janitor = recovery.New(store, a.chat.Turns(), a.log, recovery.Options{Keeper: a.chat.Keeper(), Observer: a.mets})
	return nil
}

func (a *app) buildWebhooks(context.Context) error {
	cfg := a.cfg
	webhookStore := webhookdb.New(a.pool)
	a.dispatcher = &webhook.Dispatcher{Store: webhookStore, Client: webhook.NewClient(a.guard.Transport(), cfg.Webhooks.Timeout),
		Owner: cfg.Replica.ID, PublicURL: cfg.Webhooks.PublicURL, Log: a.log.With("component", "webhooks"),
		Config: webhook.Config{MaxAttempts: cfg.Webhooks.MaxAttempts, RetryBase: cfg.Webhooks.RetryBase, Timeout: cfg.Webhooks.Timeout}}
	a.dispatcher.Links = &approvallink.Minter{Key: a.linkKey, Store: linkdb.New(a.pool)}
	a.webhooks = webhook.NewService(webhookStore, a.guard, a.log, a.dispatcher.Wake)
	return nil
}

// startListening makes cancel, delete and new events reach every replica
// through Postgres, and settings changes the settings pages open on this
// replica (GET /api/settings/events).
func (a *app) startListening(ctx context.Context) error {
	lctx, stopListening := context.WithCancel(context.WithoutCancel(ctx))
	a.lctx, a.stopListening = lctx, stopListening
	a.onClose(stopListening)
	a.changes = changefeed.New()
	a.inbox = inbox.NewHub(postgres.NewInboxStore(a.pool), a.log.With("component", "inbox"))
	channels := []string{conversation.ChannelEvents, conversation.ChannelSignals, webhook.Channel, postgres.PolicyChannel,
		postgres.SettingsChannel}
	if ttl := a.cfg.Auth.CacheTTL; ttl > 0 {
		// Sessions and tokens are served from memory only while the
		// listener hears every change to them (AUTH_CACHE_TTL).
		a.creds = auth.NewCredentialCache(authdb.NewSessions(a.pool), authdb.NewTokens(a.pool), ttl, 0)
		channels = append(channels, authdb.Channel)
	}
	listener := notify.NewListener(a.pool, a.log.With("component", "listener"), (*notifications)(a))
	go listener.Run(lctx, channels...)
	return nil
}

// notifications is the app as the listener's notify.Handler.
type notifications app

// Connected: notifications sent while the listener was away were not
// heard, so whoever waits for them looks again.
func (n *notifications) Connected() {
	a := (*app)(n)
	if a.creds != nil {
		a.creds.Listening()
	}
	a.events.OnReconnect()
	a.dispatcher.Wake()
	a.changes.Publish(policy.Change{Kind: policy.ChangeResync})
	a.inbox.WakeAll()
}

// Disconnected: until the listener is back, changes to sessions and
// tokens go unheard, so none is served from memory.
func (n *notifications) Disconnected() {
	if a := (*app)(n); a.creds != nil {
		a.creds.Deaf()
	}
}

// Notified hands a Postgres notification to the part it is for.
func (n *notifications) Notified(channel string, payload []byte) {
	a := (*app)(n)
	if ch, ok := postgres.SettingsChange(channel, payload); ok {
		a.changes.Publish(ch)
	}
	switch channel {
	case conversation.ChannelEvents:
		a.events.OnEventsNotification(payload)
		a.inbox.OnEventsNotification(payload)
	case conversation.ChannelSignals:
		a.chat.OnSignal(payload)
		a.inbox.OnSignal(payload)
	case webhook.Channel:
		a.dispatcher.Wake()
	case authdb.Channel:
		if a.creds != nil {
			authdb.Invalidate(a.creds, payload)
		}
	case postgres.PolicyChannel:
		// A policy change committed: load it now rather than in the next turn.
		if v, err := strconv.ParseInt(string(payload), 10, 64); err == nil {
			go a.policies.Requests.WarmTools(a.lctx, v)
		}
	}
}

func (a *app) startChat(ctx context.Context) error {
	if err := a.janitor.Recover(ctx); err != nil {
		return err
	}
	a.janitor.Start(a.lctx)
	return nil
}

// listen opens DEBUG_ADDR and LISTEN_ADDR; the links, the webhooks' and the
// face's URLs name the port actually listened on (LISTEN_ADDR=127.0.0.1:0
// picks one).
func (a *app) listen(context.Context) error {
	cfg := a.cfg
	_, stopDebug, err := serveDebug(cfg.DebugAddr, a.log)
	if err != nil {
		return err
	}
	a.onClose(stopDebug)
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddr, err)
	}
	a.ln = ln
	a.onClose(func() { _ = ln.Close() })
	a.linkCfg = cfg
	if host, port, _ := net.SplitHostPort(cfg.ListenAddr); port == "0" {
		_, real, _ := net.SplitHostPort(ln.Addr().String())
		a.linkCfg.ListenAddr = net.JoinHostPort(host, real)
	}
	if cfg.Webhooks.PublicURL == config.DefaultPublicURL(cfg.ListenAddr) { // PUBLIC_URL unset: the port really listened on
		a.dispatcher.PublicURL = config.DefaultPublicURL(a.linkCfg.ListenAddr)
	}
	if a.upCfg.Face != nil {
		// The face is where the port really listened on is, too; no turn
		// runs before the server serves, so none has read the old one.
		a.upCfg.Face.BaseURL = a.dispatcher.PublicURL
	}
	logRoute(a.log, cfg, a.upCfg.Face)
	return nil
}

// startDispatching: every replica sends the webhook deliveries that are
// due; the store's claims keep two from sending the same attempt.
func (a *app) startDispatching(context.Context) error {
	dispatched := make(chan struct{})
	go func() { defer close(dispatched); a.dispatcher.Run(a.lctx) }()
	a.onClose(func() { a.stopListening(); <-dispatched })
	return nil
}

func (a *app) buildHTTP(ctx context.Context) error {
	cfg := a.cfg
	authn := newAuth(cfg, a.pool, a.log, a.creds)
	if err := prepareAccounts(ctx, a.linkCfg, authn, a.log, a.stdout); err != nil {
		return err
	}
	a.watch()
	// The gate at the call decides on every call through the MCP face
	// (internal/conversation implements it); without one the face is off.
	var mcpGate gateway.Gate
	if cfg.Route.Gateway() {
		mcpGate = callgate.New(a.chat.Keeper())
	}
	agentFace, agents := newAgentFace(cfg, a.chat.Keeper(), authn.SignIn, a.policies, a.caller, a.events, a.log)
	a.held = agents
	a.api = toolhttp.NewServer(a.log, a.policies, a.chat, authn, a.store, toolhttp.Options{MaxBodyBytes: cfg.MaxBodyBytes, Heartbeat: cfg.SSEHeartbeat,
		WebDir: cfg.WebDir, Web: frontend.App(), Version: a.build.Version,
		TrustProxyHeaders: cfg.Auth.TrustProxy, AllowedHosts: cfg.AllowedHosts, Idempotency: idempotencydb.New(a.pool),
		Metrics: a.mets, MetricsToken: cfg.MetricsToken, Webhooks: a.webhooks,
		MCPFace: newMCPFace(cfg, a.tokens, mcpGate, a.policies, a.caller, a.log), SettingsChanges: a.changes,
		AgentFace: agentFace, Inbox: postgres.NewInboxStore(a.pool), InboxChanges: a.inbox, HeldDecider: a.held,
		ApprovalLinks: newApprovalLinks(a.pool, a.chat, a.log)})
	// No WriteTimeout: streamed responses live as long as their turn.
	a.srv = &http.Server{Handler: a.api, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelWarn)}
	// At shutdown the streams that only follow a conversation (an open
	// browser tab) end at once, rather than holding Shutdown for the grace
	// period; turns still running keep it.
	a.srv.RegisterOnShutdown(a.api.CloseStreams)
	return nil
}

// newApprovalLinks is the service behind the signed approve and deny links.
// For now a decision by link goes through the turn engine directly
// (approvallink.ChatDecider); the inbox's shared decision function, which
// also decides agents' held calls, takes its place.
func newApprovalLinks(pool *pgxpool.Pool, chat *engine.Service, log *slog.Logger) *approvallink.Service {
	store := linkdb.New(pool)
	return approvallink.NewService(store, approvallink.ChatDecider{Engine: chat, Store: store}, chat.Keeper(), log.With("component", "approval_links"))
}

// watch gives the metrics what they read from the event hub and the
// database.
func (a *app) watch() {
	mets, events, pool := a.mets, a.events, a.pool
	for _, source := range []string{"memory", "store"} {
		mets.WatchCounter("toolgate_stream_reads_total", "Reads of the event streams open on this replica, by source: memory (events this replica stored, handed over as stored) or store (read back from Postgres).",
			"source", source, func() float64 {
				memory, store := events.StreamReads()
				if source == "memory" {
					return float64(memory)
				}
				return float64(store)
			})
	}
	if creds := a.creds; creds != nil {
		for _, kind := range []string{"session", "token"} {
			for _, source := range []string{"memory", "database"} {
				mets.WatchCounter("toolgate_"+kind+"_lookups_total", "Signed-in "+kind+"s looked up by this replica, by source: memory (read before, and nothing about it has changed since: AUTH_CACHE_TTL) or database.",
					"source", source, func() float64 {
						memory, store := creds.Lookups(kind)
						if source == "memory" {
							return float64(memory)
						}
						return float64(store)
					})
			}
		}
	}
	mets.WatchGauge("toolgate_approvals_pending", "Approval requests waiting for a decision now, in the whole database.", func() float64 {
		n, err := postgres.PendingApprovals(context.Background(), pool)
		if err != nil {
			return -1
		}
		return float64(n)
	})
	mets.WatchGauge("toolgate_event_streams_following", "Conversation event streams open in this replica (POST streams and GET /api/conversations/{id}/events).", func() float64 {
		return float64(events.Subscribers())
	})
}
