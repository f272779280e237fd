package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// serveDebug serves net/http/pprof on DEBUG_ADDR (config checked it is a
// loopback address), on its own listener so the API's listener never serves
// profiles. The returned function stops it. addr "" serves nothing.
func serveDebug(addr string, log *slog.Logger) (string, func(), error) {
	if addr == "" {
		return "", func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("listen on DEBUG_ADDR=%s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// No WriteTimeout: /debug/pprof/profile?seconds=30 answers after 30s.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("debug listener stopped", "addr", ln.Addr().String(), "error", err)
		}
	}()
	log.Info("profiles served (DEBUG_ADDR)", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}
