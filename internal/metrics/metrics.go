// Package metrics is Toolgate's Prometheus instrumentation: one registry
// with every collector, fed by internal/http (requests, streams, turn
// events) and cmd/api (the database pool). It is the only package that
// imports the Prometheus client. docs/operations.md ("Metrics") lists every metric.
package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Build says which Toolgate this is, for toolgate_build_info.
type Build struct {
	Version string
	Commit  string
}

// maxPendingApprovals bounds the approvals remembered for the decision
// latency: beyond it the oldest-looking one is forgotten (its decision is
// then counted but not timed).
const maxPendingApprovals = 10000

// Metrics is the registry and its collectors. A nil *Metrics records
// nothing, so callers need not check.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	turns        *prometheus.CounterVec
	streams      prometheus.Gauge
	events       *prometheus.CounterVec
	approvals    prometheus.Counter
	decisions    *prometheus.CounterVec
	decisionWait prometheus.Histogram
	upstreamErrs *prometheus.CounterVec
	takeovers    prometheus.Counter
	firstEvent   prometheus.Histogram
	writeTime    prometheus.Histogram
	writeConvs   prometheus.Histogram

	mu    sync.Mutex
	asked map[string]time.Time // approval request id -> requested_at, until decided
}

// New returns the metrics of one server, with the Go runtime and process
// collectors and toolgate_build_info already registered.
func New(b Build) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg, asked: map[string]time.Time{},
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_http_requests_total",
			Help: "HTTP requests answered, by method, route template (e.g. /api/conversations/:conversationId; \"none\" when refused before routing) and status class (2xx, 4xx, ...).",
		}, []string{"method", "route", "status_class"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "toolgate_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by method and route template; a streamed turn counts until its stream ends.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"method", "route"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_chat_turns_total",
			Help: "Chat turns ended, by kind (message or decisions), outcome (completed, failed, error) and code (\"\" when completed; otherwise the failed or error event's code).",
		}, []string{"kind", "outcome", "code"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "toolgate_sse_streams_active",
			Help: "Server-sent event streams (turns answering a request) open now.",
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_sse_events_total",
			Help: "Events relayed on SSE streams, by event name (docs/sse-events.md); counted even when the browser has left.",
		}, []string{"event"}),
		approvals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolgate_approvals_requested_total",
			Help: "Approval requests relayed (approval.required events).",
		}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_approval_decisions_total",
			Help: "Decisions recorded on approval requests (decision.recorded events), by state.",
		}, []string{"state"}),
		decisionWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "toolgate_approval_decision_seconds",
			Help:    "Time from an approval request (requested_at) to its approval or denial (decided_at), for requests relayed since this process started.",
			Buckets: []float64{1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600},
		}),
		upstreamErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_upstream_errors_total",
			Help: "Turns that ended with an error from the model's provider (error events whose code starts with upstream_), by code.",
		}, []string{"code"}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolgate_lease_takeovers_total",
			Help: "Turns this replica closed as interrupted because the replica running them stopped renewing their lease (TURN_LEASE_TTL).",
		}),
		firstEvent: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "toolgate_upstream_first_event_seconds",
			Help:    "Time from sending a responses.create request to its first event (or its error), retries included.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		writeTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "toolgate_event_writes_seconds",
			Help:    "Time one write of the running turns' text deltas took (one statement for every conversation with deltas waiting).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		writeConvs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "toolgate_event_write_conversations",
			Help:    "Conversations whose text deltas one write stored.",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
		}),
	}
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "toolgate_build_info",
		Help:        "Always 1; its labels say which Toolgate is running (toolgate version).",
		ConstLabels: prometheus.Labels{"version": b.Version, "commit": b.Commit},
	})
	info.Set(1)
	reg.MustRegister(m.httpRequests, m.httpDuration, m.turns, m.streams, m.events, m.approvals,
		m.decisions, m.decisionWait, m.upstreamErrs, m.takeovers, m.firstEvent, m.writeTime, m.writeConvs, info,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus text format. It does no
// access control: the caller (internal/http) does.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Request records one answered HTTP request.
func (m *Metrics) Request(method, route string, status int, took time.Duration) {
	if m == nil {
		return
	}
	method = knownMethod(method)
	if route == "" {
		route = "none"
	}
	class := "other"
	if status >= 100 && status < 600 {
		class = strconv.Itoa(status/100) + "xx"
	}
	m.httpRequests.WithLabelValues(method, route, class).Inc()
	m.httpDuration.WithLabelValues(method, route).Observe(took.Seconds())
}

func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// StreamOpened counts an SSE stream as open; call the function it returns
// when the stream ends.
func (m *Metrics) StreamOpened() (closed func()) {
	if m == nil {
		return func() {}
	}
	m.streams.Inc()
	return m.streams.Dec
}

// Event counts one relayed SSE event by name.
func (m *Metrics) Event(name string) {
	if m == nil {
		return
	}
	m.events.WithLabelValues(label(name)).Inc()
}

// TurnEnded counts a turn by kind and how it ended: outcome completed
// (code ""), failed or error with the terminal event's code. An error code
// starting with upstream_ is also counted as an upstream error.
func (m *Metrics) TurnEnded(kind, outcome, code string) {
	if m == nil {
		return
	}
	m.turns.WithLabelValues(label(kind), outcome, label(code)).Inc()
	if outcome == "error" && strings.HasPrefix(code, "upstream_") {
		m.upstreamErrs.WithLabelValues(label(code)).Inc()
	}
}

// ApprovalRequested counts an approval request and remembers when it was
// made, to time its decision.
func (m *Metrics) ApprovalRequested(id string, requestedAt time.Time) {
	if m == nil {
		return
	}
	m.approvals.Inc()
	if id == "" || requestedAt.IsZero() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.asked) >= maxPendingApprovals {
		oldest, at := "", time.Time{}
		for k, t := range m.asked {
			if oldest == "" || t.Before(at) {
				oldest, at = k, t
			}
		}
		delete(m.asked, oldest)
	}
	m.asked[id] = requestedAt
}

// ApprovalExpired is DecisionRecorded for a request this replica expired
// (APPROVAL_TTL): it makes Metrics a conversation.Observer.
func (m *Metrics) ApprovalExpired(id string, at time.Time) { m.DecisionRecorded(id, "expired", at) }

// DecisionRecorded counts a decision by state and, when a person decided
// (approved or denied) a request this process relayed, observes how long it
// waited. A superseded request (a new message instead of a decision) is
// counted, not timed.
func (m *Metrics) DecisionRecorded(id, state string, decidedAt time.Time) {
	if m == nil {
		return
	}
	m.decisions.WithLabelValues(label(state)).Inc()
	m.mu.Lock()
	at, ok := m.asked[id]
	delete(m.asked, id)
	m.mu.Unlock()
	if ok && (state == "approved" || state == "denied") && !decidedAt.IsZero() && !decidedAt.Before(at) {
		m.decisionWait.Observe(decidedAt.Sub(at).Seconds())
	}
}

// label keeps a label value that came from an event short and plain, so a
// surprising value cannot blow up the series count or the text format.
func label(v string) string {
	if len(v) > 64 {
		return "other"
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return "other"
		}
	}
	return v
}

// LeaseTakeover counts a turn closed because its replica's lease expired.
func (m *Metrics) LeaseTakeover() {
	if m != nil {
		m.takeovers.Inc()
	}
}

// UpstreamFirstEvent records how long the provider took to its first event.
func (m *Metrics) UpstreamFirstEvent(d time.Duration) {
	if m != nil {
		m.firstEvent.Observe(d.Seconds())
	}
}

// EventWrite records one write of text deltas: how many conversations it
// carried and how long it took.
func (m *Metrics) EventWrite(conversations int, took time.Duration) {
	if m != nil {
		m.writeTime.Observe(took.Seconds())
		m.writeConvs.Observe(float64(conversations))
	}
}

// WatchCounter registers a counter read from fn on every scrape, with one
// label (label=value; none when label is "").
func (m *Metrics) WatchCounter(name, help, label, value string, fn func() float64) {
	if m != nil {
		var labels prometheus.Labels
		if label != "" {
			labels = prometheus.Labels{label: value}
		}
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, fn))
	}
}

// WatchGauge registers a gauge read from fn on every scrape.
func (m *Metrics) WatchGauge(name, help string, fn func() float64) {
	if m != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
	}
}
