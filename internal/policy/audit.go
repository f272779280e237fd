package policy

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
)

// Audit actions.
const (
	ActionServerCreate  = "server.create"
	ActionServerUpdate  = "server.update"
	ActionServerDelete  = "server.delete"
	ActionToolsRefresh  = "server.tools_changed"
	ActionPolicySet     = "policy.set"
	ActionPolicyDelete  = "policy.delete"
	ActionSettingsWrite = "settings.update"
	ActionDecision      = "approval.decide" // a person's decision on an approval request
	// ActionToolCall is a receipt: a tool call the provider reported, asked
	// or not. Its After is the receipt (conversation.Receipt).
	ActionToolCall = "tool.call"
)

// AuditEntry records one change: who made it, when, and the state before and
// after (secrets masked). Before is null for a creation, After for a deletion.
type AuditEntry struct {
	ID          int64           `json:"id"`
	At          time.Time       `json:"at"`
	Actor       string          `json:"actor"`    // the user's email (auth.System: "toolgate")
	ActorID     string          `json:"actor_id"` // the user's id
	Action      string          `json:"action"`
	ServerLabel *string         `json:"server_label"`
	ToolName    *string         `json:"tool_name"`
	Before      json.RawMessage `json:"before"`
	After       json.RawMessage `json:"after"`
	// CallID and ConversationID are set on receipts only: the call id keeps
	// one receipt per call; both are in After too.
	CallID         string `json:"-"`
	ConversationID string `json:"-"`
}

// AuditPage is one page of the audit log, newest first.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	// NextCursor, when set, fetches the next (older) page.
	NextCursor *string `json:"next_cursor"`
}

// AuditQuery selects a page of the audit log.
type AuditQuery struct {
	Limit       int
	BeforeID    int64  // 0: from the newest
	ServerLabel string // "": every server
	// Actions keeps entries with one of these actions; none: every action.
	Actions []string
	// ActorID, when set, keeps only entries that user made and the
	// approval.decide entries and receipts about that user's conversations,
	// whoever made them (a member's view).
	ActorID string
}

// MarshalJSON adds the deprecated server_id alias of server_label (see Tool).
func (e AuditEntry) MarshalJSON() ([]byte, error) {
	type plain AuditEntry
	return json.Marshal(struct {
		plain
		ServerID *string `json:"server_id"`
	}{plain(e), e.ServerLabel})
}

// Audit is the audit log's part of the policy API: its pages and the
// approval statistics.
type Audit struct {
	store    Store
	requests *Requests
}

// NewAudit returns the audit part over store; requests resolves the
// policies the statistics show.
func NewAudit(store Store, requests *Requests) *Audit {
	return &Audit{store: store, requests: requests}
}

// Audit returns a page of the audit log, newest first: all of it for an
// admin; for a member, their own entries and every decision and receipt
// about their own conversations (expired, ended with the turn, decided by a
// rule: Toolgate's entries), never another user's conversations.
func (s *Audit) Audit(ctx context.Context, q AuditQuery) (AuditPage, error) {
	u, err := Caller(ctx)
	if err != nil {
		return AuditPage{}, err
	}
	if !u.IsAdmin() {
		q.ActorID = u.ID
	}
	if q.Limit <= 0 {
		q.Limit = 50
	}
	if q.Limit > 500 {
		return AuditPage{}, apperr.Invalidf("invalid_limit", "limit", "limit must be between 1 and 500 (got %d)", q.Limit)
	}
	q.Limit++ // one more tells whether there is a next page
	entries, err := s.store.Repo().Audit.List(ctx, q)
	if err != nil {
		return AuditPage{}, err
	}
	page := AuditPage{Entries: entries}
	if len(entries) == q.Limit {
		page.Entries = entries[:q.Limit-1]
		c := encodeCursor(page.Entries[len(page.Entries)-1].ID)
		page.NextCursor = &c
	}
	if page.Entries == nil {
		page.Entries = []AuditEntry{}
	}
	return page, nil
}

// WriteAuditByCaller records an entry with the request's caller as the actor, in r.
func WriteAuditByCaller(ctx context.Context, r Repo, action string, server, tool *string, before, after any) error {
	u, err := Caller(ctx)
	if err != nil {
		return err
	}
	return WriteAudit(ctx, r, u, action, server, tool, before, after)
}

// WriteAudit records an entry with u as the actor, in r.
func WriteAudit(ctx context.Context, r Repo, u auth.User, action string, server, tool *string, before, after any) error {
	b, err := marshalState(before)
	if err != nil {
		return err
	}
	a, err := marshalState(after)
	if err != nil {
		return err
	}
	return r.Audit.Insert(ctx, AuditEntry{Actor: u.Email, ActorID: u.ID, Action: action, ServerLabel: server, ToolName: tool, Before: b, After: a})
}

func marshalState(v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("null"), nil
	}
	return json.Marshal(v)
}
