// Command emulator serves an offline emulation of the OpenAI Responses API
// (POST /v1/responses, GET /v1/responses/{id}) with remote MCP tools and
// approvals, for trying and testing Toolgate without an API key. See the
// internal/emulator package for the model's rules and the behaviors.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/internal/emulator"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "emulator:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done, then shuts down gracefully.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("emulator", flag.ContinueOnError)
	fs.SetOutput(stdout)
	addr := fs.String("addr", "127.0.0.1:8091", "host:port to listen on")
	behavior := fs.String("behavior", getenv("EMULATOR_BEHAVIOR"), "timing and faults for every request, e.g. \"event-delay=20ms; status=503; times=2\" (default $EMULATOR_BEHAVIOR)")
	apiKey := fs.String("api-key", getenv("EMULATOR_API_KEY"), "require this bearer key (default $EMULATOR_API_KEY; empty: accept any)")
	mcpTimeout := fs.Duration("mcp-timeout", 30*time.Second, "limit for each MCP exchange (list, call)")
	maxStored := fs.Int("max-stored", 10000, "responses kept for previous_response_id; the oldest are dropped first")
	stateFile := fs.String("state", getenv("EMULATOR_STATE_FILE"), "keep the stored responses in this file across restarts (default $EMULATOR_STATE_FILE; empty: in memory only)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	log := slog.New(slog.NewTextHandler(stdout, nil))
	emu, err := emulator.New(emulator.Config{Behavior: *behavior, APIKey: *apiKey, MCPTimeout: *mcpTimeout, MaxStored: *maxStored, StateFile: *stateFile, Logger: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	// No WriteTimeout: streams (and stall behaviors) run as long as they need.
	srv := &http.Server{Handler: emu.Handler(), ReadHeaderTimeout: 5 * time.Second}
	log.Info("serving the OpenAI Responses emulator", "base_url", "http://"+ln.Addr().String()+"/v1/", "behavior", *behavior, "api_key_required", *apiKey != "")
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
