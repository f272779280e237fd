// Command demo-mcp serves the weather-themed demo MCP server, for trying
// Toolgate offline.
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

	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/httpserve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo-mcp:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done, then shuts down gracefully.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("demo-mcp", flag.ContinueOnError)
	fs.SetOutput(stdout)
	addr := fs.String("addr", "127.0.0.1:8090", "host:port to listen on")
	token := fs.String("token", os.Getenv("DEMO_MCP_TOKEN"), "bearer token required on /mcp (default $DEMO_MCP_TOKEN; empty: none)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil // -h printed the usage; asking for it is no failure
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	log := slog.New(slog.NewTextHandler(stdout, nil))
	demo := demomcp.New(demomcp.Options{Token: *token, Logger: log})

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: demo.Handler(), ReadHeaderTimeout: 5 * time.Second}
	// Streaming MCP responses never go idle on their own; ending their
	// requests' context lets Shutdown finish instead of waiting them out.
	base, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	srv.BaseContext = func(net.Listener) context.Context { return base }
	srv.RegisterOnShutdown(cancelRequests)

	// Log the listener's address, not the flag: with port 0 it is the real one.
	log.Info("serving MCP", "url", "http://"+ln.Addr().String()+"/mcp", "token_required", *token != "")
	return httpserve.Run(ctx, srv, ln, 5*time.Second, log)
}
