package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/approvallink"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
	"github.com/toolgate/toolgate/internal/conversation/inbox"
	"github.com/toolgate/toolgate/internal/conversation/recovery"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/hooks"
	toolhttp "github.com/toolgate/toolgate/internal/http"
	"github.com/toolgate/toolgate/internal/httpserve"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/changefeed"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/postgres/schema"
	"github.com/toolgate/toolgate/internal/responses"
	"github.com/toolgate/toolgate/internal/webhook"
)

// serve is toolgate serve: build, serve until ctx ends, shut down.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) error {
	a, err := build(ctx, cfg, log, stdout)
	defer a.close()
	if err != nil {
		return err
	}
	if err := a.serve(ctx); err != nil {
		return err
	}
	return a.shutdown(ctx)
}

// app is the server's parts, wired by build's steps in order; closers undo
// what they started, last first (close).
type app struct {
	cfg     config.Config
	log     *slog.Logger
	stdout  io.Writer
	build   buildInfo
	closers []func()

	pool       *pgxpool.Pool
	tokens     *gateway.Tokens
	linkKey    approvallink.Key // signs the approve and deny links of webhook deliveries
	guard      *netguard.Guard
	store      *postgres.Store
	discoverer *mcpclient.Discoverer
	policies   *policysvc.Service
	caller     *mcpclient.Caller
	info       conversation.Info
	upCfg      responses.Config
	mets       *metrics.Metrics
	chat       *engine.Service
	events     *eventlog.Hub // the event log and its streams
	janitor    *recovery.Janitor
	dispatcher *webhook.Dispatcher
	webhooks   *webhook.Service
	changes    *changefeed.Hub
	inbox      *inbox.Hub // wakes the inbox streams (GET /api/approvals/events)
	// creds keeps signed-in sessions and personal API tokens in memory
	// while the listener hears every change to them (nil: AUTH_CACHE_TTL=0).
	creds *auth.CredentialCache
	// held decides agents' held calls from the inbox (agentgate); nil:
	// the inbox answers 503 for them.
	held conversation.HeldDecider
	// lctx is the background work's context; stopListening ends it.
	lctx          context.Context
	stopListening context.CancelFunc
	ln            net.Listener
	linkCfg       config.Config // cfg with the port actually listened on
	api           *toolhttp.Server
	srv           *http.Server
	running       *httpserve.Server
}

// build wires the server and starts its background work. The app it
// returns is never nil: close it, also after an error.
func build(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) (*app, error) {
	a := &app{cfg: cfg, log: log, stdout: stdout, build: currentBuild()}
	log.Info("starting toolgate", "version", a.build.Version, "commit", a.build.Commit, "config", cfg)
	for _, step := range []func(context.Context) error{
		a.openDatabase, a.buildPolicies, a.buildUpstream, a.startRechecks, a.buildChat, a.buildWebhooks,
		a.startListening, a.startChat, a.listen, a.startDispatching, a.buildHTTP,
	} {
		if err := step(ctx); err != nil {
			return a, err
		}
	}
	return a, nil
}

// close undoes what build started, last first.
func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

func (a *app) onClose(f func()) { a.closers = append(a.closers, f) }

// serve serves the API until ctx ends; an error is serving's own.
func (a *app) serve(ctx context.Context) error {
	a.running = httpserve.Start(a.srv, a.ln)
	a.log.Info("toolgate is listening", "url", "http://"+a.ln.Addr().String(), "version", a.build.Version,
		"offline", a.cfg.Offline(), "model", a.cfg.OpenAIModel)
	if err := a.running.Wait(ctx); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// shutdown stops serving within SHUTDOWN_TIMEOUT, then stops the turns
// still running so each records how it ended before the pool closes.
func (a *app) shutdown(ctx context.Context) error {
	a.log.Info("shutting down", "timeout", a.cfg.ShutdownTimeout)
	// Streams still open after the grace period are turns still running.
	err := a.running.Shutdown(ctx, a.cfg.ShutdownTimeout)
	tctx, tcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer tcancel()
	a.chat.Stop(tctx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	a.log.Info("stopped")
	return nil
}

func (a *app) openDatabase(ctx context.Context) error {
	pool, err := postgres.Open(ctx, a.cfg.DatabaseURL, a.cfg.CreateDatabase, a.log)
	if err != nil {
		return err
	}
	a.pool = pool
	a.onClose(pool.Close)
	applied, err := schema.Up(ctx, pool)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		a.log.Info("applied migrations", "migrations", applied)
	}
	box, err := useSecrets(ctx, a.cfg, pool, a.log)
	if err != nil {
		return err
	}
	// Capability tokens for the MCP face: signed with a key derived from
	// SECRETS_KEY, so every replica accepts what another minted.
	a.tokens = gateway.NewTokens(box.Derive("capability-token"))
	// The approve and deny links of webhook deliveries: every replica
	// derives the same token for a delivery's retry.
	a.linkKey = box.Derive("approval-link")
	a.guard, err = newURLGuard(a.cfg)
	return err
}

func (a *app) buildPolicies(context.Context) error {
	d := a.cfg.Discovery
	limits := policy.ToolLimits{NameBytes: d.ToolNameMaxBytes, DescriptionBytes: d.ToolDescriptionMaxBytes,
		SchemaBytes: d.ToolSchemaMaxBytes, ListBytes: d.ToolListMaxBytes}
	a.store = postgres.NewStore(a.pool)
	a.discoverer = &mcpclient.Discoverer{Timeout: a.cfg.DiscoveryTimeout, Guard: a.guard, Limits: limits}
	a.policies = policysvc.New(a.store, a.discoverer, a.log, policy.Options{Limits: limits,
		Health: policy.HealthOptions{ListTimeLimit: d.ListTimeLimit, Failures: d.HealthFailures, CheckEvery: d.HealthCheck},
		URLs:   a.guard, HookClient: hooks.NewClient(a.guard.Transport())})
	// The MCP face's way to the real servers: the same URL policy as
	// discovery, one kept session per server.
	a.caller = &mcpclient.Caller{Guard: a.guard, CallTimeout: a.cfg.Face.CallTimeout, CallMaxBytes: a.cfg.Face.CallMaxBytes,
		ListTimeout: a.cfg.DiscoveryTimeout, Limits: limits}
	a.onClose(a.caller.Close)
	return nil
}
