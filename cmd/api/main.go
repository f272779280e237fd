// Command toolgate is Toolgate in one binary (built as bin/toolgate by
// make build, with the web app embedded; see frontend/webapp.go):
//
//	toolgate [serve]                 serve the API and the web app (migrations are applied at start)
//	toolgate migrate up|down|status
//	toolgate version                 the version, commit and build date stamped by make build
//	toolgate chat [flags]            a terminal client of a running Toolgate (chat.go)
//	toolgate token create EMAIL [NAME]
//	toolgate link [EMAIL]            a new one-time sign-in link (AUTH_MODE=local)
//	toolgate healthcheck             exit 0 when the server at LISTEN_ADDR answers /healthz
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/frontend"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/hooks"
	toolhttp "github.com/toolgate/toolgate/internal/http"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/responses"
	"github.com/toolgate/toolgate/internal/webhook"
)

const usage = "usage: toolgate [serve | migrate up|down|status | version | chat [flags] | token create EMAIL [NAME] | link [EMAIL] | healthcheck]"

// help is printed by toolgate help (-h, --help).
const help = usage + `

  serve (the default)        serve the API and the web app at LISTEN_ADDR;
                             pending database migrations are applied first
  migrate up|down|status     apply the pending migrations, roll back the
                             last one, or list them
  version                    print the version, commit and build date
  chat [flags]               chat with a running Toolgate in the terminal
                             (toolgate chat -h lists its flags)
  token create EMAIL [NAME]  print a new personal API token for the account
                             EMAIL (and nothing else, for TOKEN=$(...))
  link [EMAIL]               print a new one-time sign-in link (valid 1 hour)
                             for EMAIL, or for the demo or first admin
                             (a setup link before any account exists);
                             AUTH_MODE=local, on the server's machine
  healthcheck                exit 0 when the server at LISTEN_ADDR answers
                             GET /healthz, 1 otherwise (container health checks)

Settings come from the environment (DATABASE_URL, OPENAI_API_KEY, ...): see
docs/configuration.md.
`

// usageError is a command line that is none of the commands: main exits 2.
type usageError struct{ problem string }

func (e usageError) Error() string { return e.problem + "\n" + usage }

func main() {
	// The chat client talks to a running Toolgate over HTTP: it needs none
	// of the server's configuration (no DATABASE_URL) and handles its own
	// stdin, stdout and signals.
	if len(os.Args) > 1 && os.Args[1] == "chat" {
		os.Exit(runChat(os.Args[2:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "toolgate:", err)
		if errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// run is the whole program but chat; tests call it with their own env and
// context. The command line is checked before the configuration is read,
// so a mistyped command says so even when the environment is not set up.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "serve" {
		if len(args) > 1 {
			return usageError{"serve takes no arguments (settings come from the environment)"}
		}
		args = nil
	}
	if len(args) > 0 {
		switch cmd := args[0]; cmd {
		case "help", "-h", "--help":
			_, err := io.WriteString(stdout, help)
			return err
		case "version":
			if len(args) != 1 {
				return usageError{"version takes no arguments"}
			}
			return writeVersion(stdout, currentBuild())
		case "healthcheck":
			if len(args) != 1 {
				return usageError{"healthcheck takes no arguments (it checks LISTEN_ADDR)"}
			}
			return healthcheck(ctx, getenv, stdout)
		case "migrate":
			if len(args) != 2 || (args[1] != "up" && args[1] != "down" && args[1] != "status") {
				return usageError{"migrate needs one of up, down or status"}
			}
		case "token":
			if len(args) < 3 || len(args) > 4 || args[1] != "create" {
				return usageError{"token needs: token create EMAIL [NAME]"}
			}
		case "link":
			if len(args) > 2 {
				return usageError{"link takes at most one argument: link [EMAIL]"}
			}
		case "chat":
			return usageError{"chat runs from main"} // main dispatches it before run
		default:
			return usageError{fmt.Sprintf("unknown command %q", cmd)}
		}
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stdout)
	switch {
	case len(args) == 0:
		return serve(ctx, cfg, log, stdout)
	case args[0] == "migrate":
		return migrate(ctx, cfg, log, args[1], stdout)
	case args[0] == "link":
		email := ""
		if len(args) == 2 {
			email = args[1]
		}
		// Only the link goes to stdout, as with token create.
		return printLink(ctx, cfg, slog.New(slog.DiscardHandler), email, stdout)
	default: // token create
		name := "terminal"
		if len(args) == 4 {
			name = args[3]
		}
		// Only the token goes to stdout, so that TOKEN=$(toolgate token create ...) works.
		return issueToken(ctx, cfg, slog.New(slog.DiscardHandler), args[2], name, stdout)
	}
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func serve(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) error {
	build := currentBuild()
	log.Info("starting toolgate", "version", build.Version, "commit", build.Commit, "config", cfg)
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, cfg.CreateDatabase, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	applied, err := postgres.MigrateUp(ctx, pool)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		log.Info("applied migrations", "migrations", applied)
	}
	box, err := useSecrets(ctx, cfg, pool, log)
	if err != nil {
		return err
	}
	// Capability tokens for the MCP face: signed with a key derived from
	// SECRETS_KEY, so every replica accepts what another minted.
	tokens := gateway.NewTokens(box.Derive("capability-token"))
	guard, err := newURLGuard(cfg)
	if err != nil {
		return err
	}

	store := postgres.NewStore(pool)
	d := cfg.Discovery
	limits := policy.ToolLimits{NameBytes: d.ToolNameMaxBytes, DescriptionBytes: d.ToolDescriptionMaxBytes,
		SchemaBytes: d.ToolSchemaMaxBytes, ListBytes: d.ToolListMaxBytes}
	discoverer := &mcpclient.Discoverer{Timeout: cfg.DiscoveryTimeout, Guard: guard, Limits: limits}
	policies := policy.NewService(store, discoverer, log)
	policies.SetToolLimits(limits)
	policies.SetHealthOptions(policy.HealthOptions{ListTimeLimit: d.ListTimeLimit, Failures: d.HealthFailures, CheckEvery: d.HealthCheck})
	policies.SetURLChecker(guard)
	policies.SetHookClient(hooks.NewClient(guard.Transport()))
	// The MCP face's way to the real servers: the same URL policy as
	// discovery, one kept session per server.
	caller := &mcpclient.Caller{Guard: guard, CallTimeout: cfg.Face.CallTimeout, CallMaxBytes: cfg.Face.CallMaxBytes,
		ListTimeout: cfg.DiscoveryTimeout, Limits: limits}
	defer caller.Close()

	info := conversation.Info{Offline: cfg.Offline(), Model: cfg.OpenAIModel, Layout: cfg.ToolLayout, BaseURL: cfg.OpenAIBaseURL}
	upCfg := responses.Config{APIKey: cfg.OpenAIAPIKey, BaseURL: cfg.OpenAIBaseURL, Model: cfg.OpenAIModel,
		Layout: responses.Layout(cfg.ToolLayout), MaxRetries: cfg.OpenAIMaxRetries,
		FirstByteTimeout: cfg.Upstream.FirstByteTimeout, IdleTimeout: cfg.Upstream.IdleTimeout, Logger: log,
		MaxTools: cfg.Upstream.MaxToolEntries,
		Transport: responses.Transport{MaxIdleConnsPerHost: cfg.Upstream.MaxIdleConns, MaxConnsPerHost: cfg.Upstream.MaxConnsPerHost,
			IdleConnTimeout: cfg.Upstream.IdleConnTimeout},
		Face: newFace(cfg, tokens)} // nil in direct mode (MCP_ROUTE)
	if cfg.Offline() {
		off, err := startOffline(cfg, log)
		if err != nil {
			return err
		}
		defer off.close(context.WithoutCancel(ctx))
		upCfg.APIKey, upCfg.BaseURL, info.BaseURL = "offline", off.baseURL, off.baseURL
		if off.demoURL != "" {
			if err := registerDemo(auth.WithUser(ctx, auth.System), policies, off.demoURL); err != nil {
				return fmt.Errorf("register the demo MCP server: %w", err)
			}
		}
		log.Warn("OFFLINE: no OPENAI_API_KEY is set, so Toolgate talks to its built-in OpenAI Responses emulator, not a real model",
			"emulator", off.baseURL, "demo_mcp_server", off.demoURL, "demo_label", DemoLabel)
	} else if info.BaseURL == "" {
		info.BaseURL = "https://api.openai.com/v1/"
	}
	// Unreachable MCP servers are checked again in the background, so one
	// that comes back is offered again without anyone pressing Refresh.
	rechecks, stopRechecks := context.WithCancel(ctx)
	rechecked := make(chan struct{})
	go func() { defer close(rechecked); policies.RunRechecks(rechecks, cfg.HealthRecheck) }()
	defer func() { stopRechecks(); <-rechecked }()
	userLimits := conversation.Limits{MaxConcurrentTurns: cfg.UserMaxConcurrentTurns, MessagesPerMinute: cfg.UserMessagesPerMinute}
	chat := conversation.NewService(postgres.NewConversationStore(pool), postgres.NewConversationPolicies(policies), responses.New(upCfg), info, userLimits, log)
	chat.SetReplica(cfg.Replica.ID, cfg.Replica.LeaseTTL)
	chat.SetApprovalTTL(cfg.ApprovalTTL)
	// Gateway mode: whether an approved call ran is known from the face's
	// records (not_run, outcome_unknown only for a crash in between).
	chat.SetRoute(cfg.Route.Gateway())
	// Direct mode: the provider calls the MCP servers itself, so what would
	// run unasked is listed first (docs/mcp-servers.md, "Direct mode"). In gateway mode
	// (MCP_ROUTE=gateway) this stays off: every call is checked at the face.
	if !cfg.Route.Gateway() {
		chat.SetPrelist(conversation.Prelist{Lister: discoverer, Recorder: policies, MaxAge: d.PrelistMaxAge, TimeLimit: d.PrelistTimeLimit})
	}
	// Streamed text is stored on connections of its own (2 more per replica).
	eventStore, closeEventStore, err := postgres.NewEventWriterStore(ctx, pool)
	if err != nil {
		return err
	}
	defer closeEventStore()
	chat.SetEventStore(eventStore)
	webhookStore := postgres.NewWebhookStore(pool)
	hooks := &webhook.Dispatcher{Store: webhookStore, Client: webhook.NewClient(guard.Transport(), cfg.Webhooks.Timeout),
		Owner: cfg.Replica.ID, PublicURL: cfg.Webhooks.PublicURL, Log: log.With("component", "webhooks"),
		Config: webhook.Config{MaxAttempts: cfg.Webhooks.MaxAttempts, RetryBase: cfg.Webhooks.RetryBase, Timeout: cfg.Webhooks.Timeout}}
	webhooks := webhook.NewService(webhookStore, guard, log)
	webhooks.Wake = hooks.Wake
	// Cancel, delete and new events reach every replica through Postgres.
	lctx, stopListening := context.WithCancel(context.WithoutCancel(ctx))
	defer stopListening()
	listener := postgres.NewListener(pool, log.With("component", "listener"))
	// Settings changes reach the settings pages open on this replica
	// (GET /api/settings/events).
	changes := policy.NewChanges()
	listener.On = func(channel string, payload []byte) {
		if ch, ok := postgres.SettingsChange(channel, payload); ok {
			changes.Publish(ch)
		}
		switch channel {
		case conversation.ChannelEvents:
			chat.OnEventsNotification(payload)
		case conversation.ChannelSignals:
			chat.OnSignal(payload)
		case webhook.Channel:
			hooks.Wake()
		case postgres.PolicyChannel:
			// A policy change committed: load it now rather than in the next turn.
			if v, err := strconv.ParseInt(string(payload), 10, 64); err == nil {
				go policies.WarmTools(lctx, v)
			}
		}
	}
	listener.OnConnect = func() {
		chat.OnReconnect()
		hooks.Wake()
		changes.Publish(policy.Change{Kind: policy.ChangeResync}) // changes while it was away were not heard
	}
	go listener.Run(lctx, conversation.ChannelEvents, conversation.ChannelSignals, webhook.Channel, postgres.PolicyChannel,
		postgres.SettingsChannel)
	if err := chat.Recover(ctx); err != nil {
		return err
	}
	chat.Start(lctx)
	_, stopDebug, err := serveDebug(cfg.DebugAddr, log)
	if err != nil {
		return err
	}
	defer stopDebug()
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddr, err)
	}
	defer ln.Close()
	// The links printed below name the port actually listened on
	// (LISTEN_ADDR=127.0.0.1:0 picks one).
	linkCfg := cfg
	if host, port, _ := net.SplitHostPort(cfg.ListenAddr); port == "0" {
		_, real, _ := net.SplitHostPort(ln.Addr().String())
		linkCfg.ListenAddr = net.JoinHostPort(host, real)
	}
	if cfg.Webhooks.PublicURL == config.DefaultPublicURL(cfg.ListenAddr) { // PUBLIC_URL unset: the port really listened on
		hooks.PublicURL = config.DefaultPublicURL(linkCfg.ListenAddr)
	}
	if upCfg.Face != nil {
		// The face is where the port really listened on is, too; no turn
		// runs before the server serves, so none has read the old one.
		upCfg.Face.BaseURL = hooks.PublicURL
	}
	logRoute(log, cfg, upCfg.Face)
	// Every replica sends the webhook deliveries that are due; the store's
	// claims keep two from sending the same attempt.
	dispatched := make(chan struct{})
	go func() { defer close(dispatched); hooks.Run(lctx) }()
	defer func() { stopListening(); <-dispatched }()
	authn := newAuth(cfg, pool, log)
	if err := prepareAccounts(ctx, linkCfg, authn, log, stdout); err != nil {
		return err
	}
	mets := newMetrics(build, pool)
	chat.OnTakeover, chat.OnFirstEvent = mets.LeaseTakeover, mets.UpstreamFirstEvent
	chat.OnApprovalExpired = func(id string, at time.Time) { mets.DecisionRecorded(id, conversation.Expired, at) }
	chat.OnEventWrite = mets.EventWrite
	for _, source := range []string{"memory", "store"} {
		mets.WatchCounter("toolgate_stream_reads_total", "Reads of the event streams open on this replica, by source: memory (events this replica stored, handed over as stored) or store (read back from Postgres).",
			"source", source, func() float64 {
				memory, store := chat.StreamReads()
				if source == "memory" {
					return float64(memory)
				}
				return float64(store)
			})
	}
	mets.WatchGauge("toolgate_approvals_pending", "Approval requests waiting for a decision now, in the whole database.", func() float64 {
		n, err := postgres.PendingApprovals(context.Background(), pool)
		if err != nil {
			return -1
		}
		return float64(n)
	})
	mets.WatchGauge("toolgate_event_streams_following", "Conversation event streams open in this replica (POST streams and GET /api/conversations/{id}/events).", func() float64 {
		return float64(chat.Subscribers())
	})
	// The gate at the call decides on every call through the MCP face
	// (internal/conversation implements it); without one the face is off.
	var mcpGate gateway.Gate
	if cfg.Route.Gateway() {
		mcpGate = conversation.NewCallGate(chat)
	}
	api := toolhttp.NewServer(log, policies, chat, authn, store, toolhttp.Options{MaxBodyBytes: cfg.MaxBodyBytes, Heartbeat: cfg.SSEHeartbeat,
		WebDir: cfg.WebDir, Web: frontend.App(), Version: build.Version,
		TrustProxyHeaders: cfg.Auth.TrustProxy, AllowedHosts: cfg.AllowedHosts, Idempotency: postgres.NewIdempotencyStore(pool),
		Metrics: mets, MetricsToken: cfg.MetricsToken, Webhooks: webhooks,
		MCPFace: newMCPFace(cfg, tokens, mcpGate, policies, caller, log), SettingsChanges: changes})

	// No WriteTimeout: streamed responses live as long as their turn.
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	// At shutdown the streams that only follow a conversation (an open
	// browser tab) end at once, rather than holding Shutdown for the grace
	// period; turns still running keep it.
	srv.RegisterOnShutdown(api.CloseStreams)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("toolgate is listening", "url", "http://"+ln.Addr().String(), "version", build.Version, "offline", cfg.Offline(), "model", cfg.OpenAIModel)

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	// Streams still open after the grace period are turns still running:
	// stop them so each records how it ended before the pool closes.
	err = srv.Shutdown(sctx)
	tctx, tcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer tcancel()
	chat.Stop(tctx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

func migrate(ctx context.Context, cfg config.Config, log *slog.Logger, cmd string, stdout io.Writer) error {
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, cfg.CreateDatabase, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	switch cmd {
	case "up":
		applied, err := postgres.MigrateUp(ctx, pool)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "applied %d migration(s)\n", len(applied))
		for _, m := range applied {
			fmt.Fprintln(stdout, "  ", m)
		}
		return nil
	case "down":
		m, err := postgres.MigrateDown(ctx, pool)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "rolled back", m)
		return nil
	case "status":
		return postgres.MigrateStatus(ctx, pool, stdout)
	}
	return fmt.Errorf("unknown migrate command %q: use up, down or status", cmd)
}
