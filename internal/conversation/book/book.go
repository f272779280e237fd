package book

import (
	"context"
	"log/slog"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
)

// Conversations is the conversation book: a person's conversations
// (create, list, rename, delete), a conversation's transcript and tools,
// their grants, and tries of candidate rules over recent requests. Every
// method acts for the caller that ctx carries (conversation.Caller): a
// conversation belongs to its creator, and nobody else, admins included,
// can see or change it.
type Conversations struct {
	store    conversation.Store
	policies conversation.Policies
	turns    Turns
	log      *slog.Logger
	now      func() time.Time
}

// Turns is what the book needs of the turn engine.
type Turns interface {
	// Approval is a stored approval request as people see it, with its expiry.
	Approval(a conversation.Approval) conversation.Approval
	// Present is a stored approval request as people see it, without its expiry.
	Present(a conversation.Approval) conversation.Approval
	// Call is a record of the MCP face as people see it.
	Call(c conversation.GatewayCall) conversation.GatewayCall
	// ApprovalTTL is how long a request waits for a decision (APPROVAL_TTL).
	ApprovalTTL() time.Duration
	// Signal sends sig to every replica; this one acts at once.
	Signal(ctx context.Context, sig conversation.Signal) error
	// AwaitEnd waits, up to limit, until no turn runs in the conversation.
	AwaitEnd(ctx context.Context, owner, id string, limit time.Duration)
}

// New returns the book over store, whose tools and audit entries go
// through policies, whose running turns are turns', logging to log.
func New(store conversation.Store, policies conversation.Policies, turns Turns, log *slog.Logger) *Conversations {
	return &Conversations{store: store, policies: policies, turns: turns, log: log, now: time.Now}
}

// Shown is a stored approval request as people see it, with its expiry:
// as a transcript and the approval.required event show it.
func (b *Conversations) Shown(a conversation.Approval) conversation.Approval {
	return b.turns.Approval(a)
}
