package engine

import (
	"log/slog"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/book"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
	"github.com/toolgate/toolgate/internal/conversation/prelist"
	"github.com/toolgate/toolgate/internal/conversation/record"
	"github.com/toolgate/toolgate/internal/conversation/recovery"
)

// Options are a Service's settings; the zero value of each field is its
// default.
type Options struct {
	// Info describes the upstream.
	Info conversation.Info
	// Limits are the per-user limits (USER_MAX_CONCURRENT_TURNS, ...).
	Limits conversation.Limits
	// Replica names this process among the replicas sharing the database
	// ("": a new id); LeaseTTL is the lease its turns hold (TURN_LEASE_TTL,
	// 0: DefaultLeaseTTL).
	Replica  string
	LeaseTTL time.Duration
	// ApprovalTTL is how long an approval request waits for a decision
	// (APPROVAL_TTL); nil: DefaultApprovalTTL, zero or less: no expiry for
	// the servers that do not set their own (approval_ttl_seconds).
	ApprovalTTL *time.Duration
	// Gateway: the provider reaches the MCP servers through Toolgate's MCP
	// face (MCP_ROUTE=gateway), so the face's records say which calls ran.
	Gateway bool
	// Prelist turns listing before each request on (direct mode); nil or a
	// nil Lister leaves it off (gateway mode: every call is checked where
	// it runs).
	Prelist *prelist.Options
	// Events is the event log and its streams (eventlog.New); nil: a hub
	// over the service's store.
	Events *eventlog.Hub
	// Observer hears what metrics count; nil: NopObserver.
	Observer conversation.Observer
}

// New returns a Service over store that asks policies, sends requests to
// upstream and logs to log, set up by opts.
func New(store conversation.Store, policies conversation.Policies, upstream conversation.Upstream, log *slog.Logger, opts Options) *Service {
	s := &Service{store: store, policies: policies, upstream: upstream, info: opts.Info, limits: opts.Limits, log: log,
		now: time.Now, registry: registry{running: map[string]*running{}, ending: map[string]chan struct{}{},
			endRetry: [2]time.Duration{endRetryMin, endRetryMax}, stopping: make(chan struct{}),
			replica: newID("rep_"), leaseTTL: DefaultLeaseTTL},
		approvalTTL: DefaultApprovalTTL, readBackWait: record.DefaultReadBackWait,
		gateway: opts.Gateway, observer: opts.Observer, hub: opts.Events}
	s.asker = &asker{store: store, policies: policies, log: log}
	s.decider = &decider{policies: policies, limits: opts.Limits, log: log, asker: s.asker}
	s.serverHealth = &serverHealth{policies: policies, log: log}
	if s.observer == nil {
		s.observer = conversation.NopObserver{}
	}
	if s.hub == nil {
		s.hub = eventlog.New(store, eventlog.Options{Observer: s.observer})
	}
	s.book = book.New(store, policies, bookTurns{s}, log)
	s.setReplica(opts.Replica, opts.LeaseTTL)
	if opts.ApprovalTTL != nil {
		s.approvalTTL = *opts.ApprovalTTL
	}
	if opts.Prelist != nil {
		s.prelist = prelist.New(*opts.Prelist)
	}
	s.keeper = keeperOf(s)
	s.closer = closerOf(s)
	return s
}

// Keeper is the record of what ran, for the gate at the MCP face and
// recovery.
func (s *Service) Keeper() *record.Keeper { return s.keeper }

// closerOf is the recovery.Closer over s's store and keeper.
func closerOf(s *Service) *recovery.Closer {
	return recovery.NewCloser(s.store, s.keeper, s.log, func(id string) { s.hub.Poke(id, false) })
}

// keeperOf is the record.Keeper over s's settings.
func keeperOf(s *Service) *record.Keeper {
	return record.New(s.store, s.policies, s.upstream, s.log, record.Options{Gateway: s.gateway, ApprovalTTL: s.approvalTTL, ReadBackWait: s.readBackWait,
		Decision: func(a conversation.Approval) conversation.DecisionEvent { return decisionEvent(a, nil) }, ItemOf: itemOf, Grants: s.requestGrants,
		AllowedBy: allowedBy, CheckedBy: checkAllowedBy})
}
