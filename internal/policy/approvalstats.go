package policy

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
)

// The period GET /api/approvals/stats reads: the last DefaultStatsPeriod
// unless the caller names one, never more than MaxStatsPeriod.
const (
	DefaultStatsPeriod = 30 * 24 * time.Hour
	MaxStatsPeriod     = 366 * 24 * time.Hour
)

// SuggestAutoMin is how many approvals (and no denial or stop) a tool needs
// in the period before the statistics suggest letting it run without asking:
// fewer say too little about the pattern.
const SuggestAutoMin = 5

// StatsPeriod is a half-open period [From, To).
type StatsPeriod struct {
	From time.Time
	To   time.Time
}

// Validate refuses an empty, reversed or too long period.
func (p StatsPeriod) Validate() error {
	if !p.From.Before(p.To) {
		return apperr.Invalidf("invalid_period", "from", "from (%s) must be before to (%s); send both as RFC 3339 times, e.g. from=2025-06-01T00:00:00Z&to=2025-07-01T00:00:00Z",
			p.From.UTC().Format(time.RFC3339), p.To.UTC().Format(time.RFC3339))
	}
	if p.To.Sub(p.From) > MaxStatsPeriod {
		return apperr.Invalidf("invalid_period", "from", "the period from %s to %s is longer than 366 days; choose a shorter one",
			p.From.UTC().Format(time.RFC3339), p.To.UTC().Format(time.RFC3339))
	}
	return nil
}

// Decider is one person who decided a tool's approval requests, and how many.
type Decider struct {
	UserID string `json:"user_id"`
	Email  string `json:"email"` // as the audit log has it (the latest of their decisions)
	Count  int    `json:"count"`
}

// ToolStats is what the audit log says about one tool in a period.
//
// Calls: RanUnasked counts the tool.call receipts of calls that ran without
// a person being asked (allowed by a policy, a grant, a rule or a hook; not
// refused or not run at Toolgate's MCP face). Requests: every approval
// request closed in the period has one approval.decide entry that closed
// it (from state pending); those a person was asked about are Asked, split
// by how they ended: Approved, Denied, Stopped (the entry says "stop":
// true: the person stopped the batch), Expired (the time limit, or the
// provider lost the response) and Superseded (closed without a decision:
// a new message, the end of the turn). Requests a rule or a decision hook
// answered were never put to a person and are not counted here.
type ToolStats struct {
	ServerLabel string `json:"server_label"`
	ToolName    string `json:"tool_name"`
	RanUnasked  int    `json:"ran_unasked"`
	Asked       int    `json:"asked"`
	Approved    int    `json:"approved"`
	Denied      int    `json:"denied"`
	Stopped     int    `json:"stopped"`
	Expired     int    `json:"expired"`
	Superseded  int    `json:"superseded"`
	// MedianSecondsToDecision is the median time from the request to a
	// person's decision (approved, denied, stopped) over the decisions whose
	// request is still stored (a deleted conversation takes its requests
	// along); nil when there is none.
	MedianSecondsToDecision *float64 `json:"median_seconds_to_decision"`
	// TopDeciders are the (up to three) people who decided most, most first.
	TopDeciders []Decider `json:"top_deciders"`
	// WorkspacePolicy is the tool's effective workspace policy now (before
	// anyone's personal policy): never, always or blocked.
	WorkspacePolicy Policy `json:"workspace_policy"`
	// SuggestAuto: a person approved the tool every time they were asked
	// (at least SuggestAutoMin times, never denied or stopped) and the
	// workspace still asks for it, so "never ask" (Auto) may fit.
	SuggestAuto bool `json:"suggest_auto"`
}

// ApprovalStats is the approval statistics of a period, per tool.
type ApprovalStats struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// SuggestAutoMin is SuggestAutoMin, for the page to say.
	SuggestAutoMin int         `json:"suggest_auto_min"`
	Tools          []ToolStats `json:"tools"`
}

// suggestAuto says whether t, with the workspace's resolution res now,
// earns the "make it Auto?" suggestion. A tool that asks only because the
// admin's "ask for everything" switch is on is already never underneath.
func suggestAuto(t ToolStats, res Resolution) bool {
	return t.Approved >= SuggestAutoMin && t.Denied == 0 && t.Stopped == 0 &&
		res.Policy == Always && res.Source != FromAskEverything
}

// ApprovalStats counts, per tool, what the audit log holds for period p:
// admins only. Each tool carries its workspace policy now and whether the
// statistics suggest making it Auto.
func (s *Audit) ApprovalStats(ctx context.Context, p StatsPeriod) (ApprovalStats, error) {
	u, err := Caller(ctx)
	if err != nil {
		return ApprovalStats{}, err
	}
	if !u.IsAdmin() {
		return ApprovalStats{}, apperr.New(apperr.Forbidden, "admin_only", "only an admin can read the approval statistics; ask an admin")
	}
	if err := p.Validate(); err != nil {
		return ApprovalStats{}, err
	}
	tools, err := s.store.Repo().Audit.Stats(ctx, p)
	if err != nil {
		return ApprovalStats{}, err
	}
	version, _, err := s.store.PolicyVersion(ctx, "")
	if err != nil {
		return ApprovalStats{}, err
	}
	for i := range tools {
		res, err := s.requests.ResolveAt(ctx, Read{Version: version}, tools[i].ServerLabel, tools[i].ToolName)
		if err != nil {
			return ApprovalStats{}, err
		}
		tools[i].WorkspacePolicy = res.Policy
		tools[i].SuggestAuto = suggestAuto(tools[i], res)
	}
	if tools == nil {
		tools = []ToolStats{}
	}
	return ApprovalStats{From: p.From, To: p.To, SuggestAutoMin: SuggestAutoMin, Tools: tools}, nil
}
