package conversation

import (
	"context"

	"github.com/toolgate/toolgate/internal/policy"
)

// Store runs work against the conversation tables.
type Store interface {
	// Tx runs fn in one transaction: committed if fn returns nil.
	Tx(ctx context.Context, fn func(Repo) error) error
	// Repo reads and writes outside a transaction, one statement at a time.
	Repo() Repo
}

// Repo is the persistence the conversation service needs. Methods return
// apperr errors: NotFound for a missing conversation.
type Repo interface {
	// Policy is the policy repository on the same transaction, so that a
	// decision and the policy it remembers are stored together.
	Policy() policy.Repo

	CreateConversation(ctx context.Context, id, title string) (Conversation, error)
	ListConversations(ctx context.Context, limit int) ([]Conversation, error)
	// Conversation returns one conversation; lock holds it until the
	// transaction ends, which serialises every turn and decision on it.
	Conversation(ctx context.Context, id string, lock bool) (Conversation, error)
	RenameConversation(ctx context.Context, id, title string) (Conversation, error)
	DeleteConversation(ctx context.Context, id string) error

	// StartTurn marks turn as the conversation's running turn.
	StartTurn(ctx context.Context, id, turn string) error
	// EndTurn clears the running turn if it is still turn, and when
	// lastResponse is not empty makes it the conversation's last response.
	EndTurn(ctx context.Context, id, turn, lastResponse string) error
	// ClearTurns forgets every running turn: at start, none can be running.
	ClearTurns(ctx context.Context) (int64, error)
	// SupersedeOrphans supersedes, with reason, the pending approval
	// requests of conversations with no running turn whose response is not
	// the conversation's last: they came from a response that never
	// completed and can no longer be answered.
	SupersedeOrphans(ctx context.Context, reason string) (int64, error)

	// AppendItem adds it at the end of the transcript and returns it with
	// its sequence number and time.
	AppendItem(ctx context.Context, conversationID string, it Item) (Item, error)
	Items(ctx context.Context, conversationID string) ([]Item, error)

	InsertApproval(ctx context.Context, a Approval) error
	// Approvals returns the conversation's approval requests, oldest first;
	// with ids, only those; lock holds them until the transaction ends.
	Approvals(ctx context.Context, conversationID string, ids []string, lock bool) ([]Approval, error)
	// ResponseApprovals returns the approval requests one response made,
	// oldest first, locked.
	ResponseApprovals(ctx context.Context, conversationID, response string) ([]Approval, error)
	// Decide stores a's state and decision fields.
	Decide(ctx context.Context, a Approval) error
	// MarkAnswered records that response carried the answers to ids.
	MarkAnswered(ctx context.Context, ids []string, response string) error

	// Grants returns the tools allowed without asking in the conversation,
	// by server label.
	Grants(ctx context.Context, conversationID string) (map[string]map[string]bool, error)
	AddGrant(ctx context.Context, conversationID, server, tool, approvalID string) error
}
