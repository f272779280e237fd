package http

import (
	"crypto/sha256"
	"crypto/subtle"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/metrics"
)

// getMetrics is GET /metrics: the Prometheus text format, for a scraper
// that sends METRICS_TOKEN as its bearer token. Without METRICS_TOKEN the
// route answers 404 (metrics_disabled), and without the right token 401
// (metrics_unauthenticated): sessions and personal tokens do not count.
func (s *Server) getMetrics(c echo.Context) error {
	if s.metrics == nil || s.metricsToken == "" {
		return apperr.NotFoundf("metrics_disabled",
			"metrics are off on this server: set METRICS_TOKEN (at least 24 characters) and scrape /metrics with 'Authorization: Bearer <METRICS_TOKEN>'")
	}
	scheme, tok, _ := strings.Cut(c.Request().Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || !sameSecret(strings.TrimSpace(tok), s.metricsToken) {
		return apperr.New(apperr.Unauthenticated, "metrics_unauthenticated",
			"GET /metrics needs the server's METRICS_TOKEN as 'Authorization: Bearer <METRICS_TOKEN>'; sign-in sessions and personal API tokens are not accepted here")
	}
	s.metrics.Handler().ServeHTTP(c.Response(), c.Request())
	return nil
}

// sameSecret compares two secrets in time that depends on neither.
func sameSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// observeRequests counts every answered request by route template and
// status class. It runs before routing and outside logRequests, which has
// written any error response by the time this reads the status.
func (s *Server) observeRequests(next echo.HandlerFunc) echo.HandlerFunc {
	if s.metrics == nil {
		return next
	}
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		s.metrics.Request(c.Request().Method, c.Path(), c.Response().Status, time.Since(start))
		return err
	}
}

// observedSink counts a turn's events on their way to the browser: every
// event by name, approval requests and decisions, and the terminal event
// as the turn's outcome.
type observedSink struct {
	next conversation.Sink
	m    *metrics.Metrics
	mu   sync.Mutex
	kind string // from the conversation event that opens the stream
}

// observe wraps sink; without metrics it is sink itself.
func (s *Server) observe(sink conversation.Sink) conversation.Sink {
	if s.metrics == nil {
		return sink
	}
	return &observedSink{next: sink, m: s.metrics}
}

func (o *observedSink) Send(event string, data any) {
	if o.next != nil {
		o.next.Send(event, data)
	}
	o.m.Event(event)
	switch d := data.(type) {
	case conversation.ConversationEvent:
		o.mu.Lock()
		o.kind = d.Kind
		o.mu.Unlock()
	case conversation.Approval:
		o.m.ApprovalRequested(d.ID, d.RequestedAt)
	case conversation.DecisionEvent:
		o.m.DecisionRecorded(d.ApprovalRequestID, d.State, d.DecidedAt)
	case conversation.CompletedEvent:
		o.m.TurnEnded(o.turnKind(), "completed", "")
	case conversation.FailedEvent:
		o.m.TurnEnded(o.turnKind(), "failed", d.Code)
	case conversation.TurnError:
		o.m.TurnEnded(o.turnKind(), "error", d.Code)
	}
}

func (o *observedSink) turnKind() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.kind
}
