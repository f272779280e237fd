// Command api is the Toolgate API server.
//
//	api                       serve the API (migrations are applied at start)
//	api migrate up|down|status
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
	"syscall"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/conversation"
	toolhttp "github.com/toolgate/toolgate/internal/http"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/responses"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

// run is the whole program; tests call it with their own env and context.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stdout)
	switch {
	case len(args) == 0:
		return serve(ctx, cfg, log, stdout)
	case args[0] == "migrate" && len(args) == 2:
		return migrate(ctx, cfg, log, args[1], stdout)
	case args[0] == "token" && (len(args) == 3 || len(args) == 4) && args[1] == "create":
		name := "terminal"
		if len(args) == 4 {
			name = args[3]
		}
		// Only the token goes to stdout, so that TOKEN=$(api token create ...) works.
		return issueToken(ctx, cfg, slog.New(slog.DiscardHandler), args[2], name, stdout)
	default:
		return errors.New("usage: api [migrate up|down|status | token create EMAIL [NAME]]")
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
	log.Info("starting toolgate", "config", cfg)
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
	if err := useSecrets(ctx, cfg, pool, log); err != nil {
		return err
	}
	guard, err := newURLGuard(cfg)
	if err != nil {
		return err
	}

	store := postgres.NewStore(pool)
	discoverer := &mcpclient.Discoverer{Timeout: cfg.DiscoveryTimeout, Guard: guard}
	policies := policy.NewService(store, discoverer, log)
	policies.SetURLChecker(guard)

	info := conversation.Info{Offline: cfg.Offline(), Model: cfg.OpenAIModel, Layout: cfg.ToolLayout, BaseURL: cfg.OpenAIBaseURL}
	upCfg := responses.Config{APIKey: cfg.OpenAIAPIKey, BaseURL: cfg.OpenAIBaseURL, Model: cfg.OpenAIModel,
		Layout: responses.Layout(cfg.ToolLayout), MaxRetries: cfg.OpenAIMaxRetries, Logger: log}
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
	limits := conversation.Limits{MaxConcurrentTurns: cfg.UserMaxConcurrentTurns, MessagesPerMinute: cfg.UserMessagesPerMinute}
	chat := conversation.NewService(postgres.NewConversationStore(pool), policies, responses.New(upCfg), info, limits, log)
	if err := chat.Recover(ctx); err != nil {
		return err
	}
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
	authn := newAuth(cfg, pool, log)
	if err := prepareAccounts(ctx, linkCfg, authn, log, stdout); err != nil {
		return err
	}
	api := toolhttp.NewServer(log, policies, chat, authn, store, toolhttp.Options{MaxBodyBytes: cfg.MaxBodyBytes, Heartbeat: cfg.SSEHeartbeat, WebDir: cfg.WebDir,
		TrustProxyHeaders: cfg.Auth.TrustProxy, AllowedHosts: cfg.AllowedHosts})

	// No WriteTimeout: streamed responses live as long as their turn.
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("toolgate is listening", "url", "http://"+ln.Addr().String(), "offline", cfg.Offline(), "model", cfg.OpenAIModel)

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
