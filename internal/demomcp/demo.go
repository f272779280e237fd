// Package demomcp is a small weather-themed MCP server for trying Toolgate
// offline and for tests that must prove whether a tool really ran: every tool
// changes or reads real in-memory state, and every tools/call is counted.
package demomcp

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Demo server.
type Options struct {
	Token  string       // if non-empty, /mcp requires "Authorization: Bearer <Token>"
	Logger *slog.Logger // nil discards logs
}

// Demo is a demo MCP server with its state.
type Demo struct {
	token   string
	log     *slog.Logger
	store   *store
	handler http.Handler
}

// New returns a Demo seeded with a few cities' forecasts.
func New(opts Options) *Demo {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Demo{token: opts.Token, log: log, store: newStore(time.Now)}

	server := mcp.NewServer(&mcp.Implementation{Name: "toolgate-demo-weather", Title: "Toolgate demo weather", Version: "1.0.0"},
		&mcp.ServerOptions{Instructions: "Weather forecasts for a few cities, kept in memory. Some tools change or delete data, or notify people."})
	server.AddReceivingMiddleware(d.countCalls)
	addTools(server, d.store)

	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{
			// The SDK rejects (403) requests that arrive on a loopback address
			// with a non-loopback Host header, against DNS rebinding. This demo
			// is reached by name through proxies, port forwards and docker
			// compose (e.g. Host "demo-mcp:8090" on a published 127.0.0.1
			// port), holds no secrets, and can require a token instead.
			DisableLocalhostProtection: true,
			// Clients that never send DELETE must not leak sessions forever.
			SessionTimeout: 30 * time.Minute,
		})

	mux := http.NewServeMux()
	mux.Handle("/mcp", d.requireToken(mcpHandler))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, d.State())
	})
	mux.HandleFunc("GET /calls", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string][]Call{"calls": d.Calls()})
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, _ *http.Request) {
		d.Reset()
		writeJSON(w, http.StatusOK, d.State())
	})
	d.handler = mux
	return d
}

// Handler serves /mcp, GET /healthz, GET /state, GET /calls and POST /reset.
func (d *Demo) Handler() http.Handler { return d.handler }

// State returns a deep copy of the current state.
func (d *Demo) State() State { return d.store.snapshot() }

// Calls returns every tools/call received since the start or the last
// Reset (up to the last 10000), oldest first, with its arguments as sent: a
// test can tell how often a tool ran with which arguments.
func (d *Demo) Calls() []Call { return d.store.callLog() }

// Reset restores the seed forecasts and clears the alerts, call counters and call log.
func (d *Demo) Reset() {
	d.store.reset()
	d.log.Info("demo state reset")
}

// countCalls counts every tools/call that reaches the server, before input
// validation, so a test can prove a tool call never got here.
func (d *Demo) countCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
				d.store.countCall(p.Name, p.Arguments)
				d.log.Info("tool called", "tool", p.Name)
			}
		}
		return next(ctx, method, req)
	}
}

func (d *Demo) requireToken(next http.Handler) http.Handler {
	if d.token == "" {
		return next
	}
	want := []byte("Bearer " + d.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			d.log.Warn("rejected MCP request without the right token", "remote", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="demo-mcp"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{
				"error":   "unauthorized",
				"message": "send the header \"Authorization: Bearer <token>\" with the demo server's token",
			})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
