package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation/inbox"
)

// InboxStore is the inbox's reads (inbox.Store): a person's approval
// requests across their chats and agents, each with its conversation.
type InboxStore struct{ q querier }

// NewInboxStore returns the inbox's store on pool.
func NewInboxStore(pool *pgxpool.Pool) *InboxStore { return &InboxStore{q: pool} }

var _ inbox.Store = (*InboxStore)(nil)

// inboxFrom is approval_requests joined to their conversations, as one row
// source whose columns approvalCols name unqualified (the conversation's
// own under src_ names).
const inboxFrom = ` FROM (SELECT a.*, c.kind AS src_kind, c.title AS src_title, c.client AS src_client
	FROM approval_requests a JOIN conversations c ON c.id = a.conversation_id
	WHERE c.owner_id = $1 AND `

func scanWaiting(row pgx.CollectableRow, extra ...any) (inbox.Waiting, error) {
	var w inbox.Waiting
	a, err := scanApproval(row, append([]any{&w.Source.Kind, &w.Source.Title, &w.Source.Client}, extra...)...)
	w.Approval, w.Source.ConversationID = a, a.ConversationID
	return w, err
}

// Pending returns owner's pending approval requests, oldest first, and the
// database's clock (what "out of time" is judged against).
func (s *InboxStore) Pending(ctx context.Context, owner string) ([]inbox.Waiting, time.Time, error) {
	rows, err := s.q.Query(ctx, `SELECT `+approvalCols+`, src_kind, src_title, src_client, clock_timestamp()`+
		inboxFrom+`a.state = 'pending') r ORDER BY requested_at, id`, owner)
	if err != nil {
		return nil, time.Time{}, translate(err, "read the inbox")
	}
	var now time.Time
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (inbox.Waiting, error) {
		return scanWaiting(row, &now)
	})
	if err != nil {
		return nil, now, translate(err, "read the inbox")
	}
	if out == nil {
		out = []inbox.Waiting{}
		err = s.q.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now)
	}
	return out, now, translate(err, "read the database's clock")
}

// Find returns owner's approval request id; not found when owner has none
// of that id (another person's included).
func (s *InboxStore) Find(ctx context.Context, owner, id string) (inbox.Waiting, error) {
	rows, err := s.q.Query(ctx, `SELECT `+approvalCols+`, src_kind, src_title, src_client`+inboxFrom+`a.id = $2) r`, owner, id)
	if err != nil {
		return inbox.Waiting{}, translate(err, "read an approval request")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (inbox.Waiting, error) { return scanWaiting(row) })
	if err != nil {
		return inbox.Waiting{}, translate(err, "read an approval request")
	}
	if len(out) == 0 {
		return inbox.Waiting{}, apperr.NotFoundf("approval_not_found", "you have no approval request %q", id)
	}
	return out[0], nil
}

// Owners returns the owner of each of the conversations ids that exists
// (and has one).
func (s *InboxStore) Owners(ctx context.Context, ids []string) (map[string]string, error) {
	rows, err := s.q.Query(ctx, `SELECT id, owner_id FROM conversations WHERE id = ANY($1) AND owner_id IS NOT NULL`, ids)
	if err != nil {
		return nil, translate(err, "read conversations' owners")
	}
	out := map[string]string{}
	var id, owner string
	_, err = pgx.ForEachRow(rows, []any{&id, &owner}, func() error {
		out[id] = owner
		return nil
	})
	return out, translate(err, "read conversations' owners")
}
