// Package httpserve is the serve-then-shut-down block the commands share:
// an http.Server serving on a listener until the context ends, then a
// graceful Shutdown.
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server is an http.Server serving on a listener in the background.
type Server struct {
	srv  *http.Server
	errc chan error

	mu      sync.Mutex
	fresh   map[net.Conn]bool // connections that have not sent a request yet
	closing bool              // shutting down: a connection new from now on is closed at once
}

// Start serves srv on ln in the background. At shutdown the connections
// that never sent a request are closed at once: http.Server.Shutdown would
// otherwise wait up to 5 seconds for each (a client's spare connection, dialed
// and put in its pool unused, keeps a shutdown waiting that long).
func Start(srv *http.Server, ln net.Listener) *Server {
	s := &Server{srv: srv, errc: make(chan error, 1), fresh: map[net.Conn]bool{}}
	next := srv.ConnState
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		s.track(c, st)
		if next != nil {
			next(c, st)
		}
	}
	srv.RegisterOnShutdown(s.closeFresh)
	go func() { s.errc <- srv.Serve(ln) }()
	return s
}

// track keeps the set of connections in http.StateNew. Once shutting
// down, a connection that only now reports itself new (accepted before the
// listener closed, its goroutine scheduled late, as on a busy machine) is
// closed at once too.
func (s *Server) track(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st == http.StateNew {
		if s.closing {
			_ = c.Close()
			return
		}
		s.fresh[c] = true
	} else {
		delete(s.fresh, c)
	}
}

// closeFresh closes the connections that have not sent a request: the
// listener is closed, so none of them will be served.
func (s *Server) closeFresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	for c := range s.fresh {
		_ = c.Close()
		delete(s.fresh, c)
	}
}

// Wait blocks until ctx is done (nil) or serving stopped on its own (its
// error).
func (s *Server) Wait(ctx context.Context) error {
	select {
	case err := <-s.errc:
		return err
	case <-ctx.Done():
		return nil
	}
}

// Shutdown stops taking requests and waits up to timeout for the open ones
// to finish (http.Server.Shutdown's error: context.DeadlineExceeded when
// some were still open). ctx's values are kept, its cancellation is not.
func (s *Server) Shutdown(ctx context.Context, timeout time.Duration) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	return s.srv.Shutdown(sctx)
}

// Run serves srv on ln until ctx is done, then shuts it down, giving open
// requests up to timeout; past it the server is closed and the shutdown's
// error returned. A serving error before ctx is done is returned as is.
func Run(ctx context.Context, srv *http.Server, ln net.Listener, timeout time.Duration, log *slog.Logger) error {
	s := Start(srv, ln)
	if err := s.Wait(ctx); err != nil {
		return err
	}
	log.Info("shutting down")
	if err := s.Shutdown(ctx, timeout); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := <-s.errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
