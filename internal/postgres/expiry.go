package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/conversation"
)

// requestTTL is, for approval_requests a left-joined with its server s, how
// many seconds the request waits: the server's approval_ttl_seconds, else
// APPROVAL_TTL ($1, in seconds). Zero or less never expires. A request
// whose server was deleted waits APPROVAL_TTL.
const requestTTL = `coalesce(s.approval_ttl_seconds::float8, $1::float8)`

// tooOld is the condition that a pending request is out of time: its
// expires_at (requested_at + requestTTL) is not after the database's clock,
// as a decision judges it (conversation.Service.timeIsUp).
const tooOld = `a.state = 'pending' AND ` + requestTTL + ` > 0
	AND a.requested_at <= clock_timestamp() - make_interval(secs => ` + requestTTL + `)`

// ExpiringConversations lists up to limit conversations with no running
// turn that hold a pending approval request older than its server's
// approval_ttl_seconds or, where the server sets none, ttl.
func (r leaseStore) ExpiringConversations(ctx context.Context, ttl time.Duration, limit int) ([]string, error) {
	rows, err := r.q.Query(ctx, `SELECT a.conversation_id FROM approval_requests a
		JOIN conversations c ON c.id = a.conversation_id
		LEFT JOIN mcp_servers s ON s.label = a.server_label
		WHERE `+tooOld+` AND c.active_turn IS NULL
		GROUP BY a.conversation_id ORDER BY min(a.requested_at) LIMIT $2`, ttl.Seconds(), limit)
	if err != nil {
		return nil, translate(err, "list conversations with expiring approval requests")
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, translate(err, "list conversations with expiring approval requests")
}

// ExpireApprovals locks the conversation, if no turn runs in it, and
// expires its pending approval requests that waited too long (as
// ExpiringConversations judges), each with reason(request), in one
// conditional UPDATE: a request another replica (or a decision) settled
// first is not touched, so each expires at most once. It returns the
// conversation's owner and the requests it expired, as stored. Call it in
// a transaction.
func (r leaseStore) ExpireApprovals(ctx context.Context, conversationID string, ttl time.Duration,
	reason func(conversation.Approval) string) (string, []conversation.Approval, error) {
	var owner string
	err := r.q.QueryRow(ctx, `SELECT coalesce(owner_id, '') FROM conversations WHERE id = $1 AND active_turn IS NULL`+lockConversation,
		conversationID).Scan(&owner)
	if noRows(err) {
		return "", nil, nil // deleted, or a turn started since: its end settles what it must
	}
	if err != nil {
		return "", nil, translate(err, "lock a conversation to expire its approval requests")
	}
	due, err := approvalStore(r).approvals(ctx, "read expiring approval requests", `id IN (SELECT a.id FROM approval_requests a
		LEFT JOIN mcp_servers s ON s.label = a.server_label WHERE a.conversation_id = $2 AND `+tooOld+`)
		ORDER BY requested_at, id`, ttl.Seconds(), conversationID)
	if err != nil || len(due) == 0 {
		return owner, nil, err
	}
	ids, reasons := make([]string, len(due)), make([]string, len(due))
	for i, a := range due {
		ids[i], reasons[i] = a.ID, reason(a)
	}
	rows, err := r.q.Query(ctx, `UPDATE approval_requests a SET state = 'expired', decided_at = clock_timestamp(), reason = x.reason,
			decided_by = NULL, decided_by_id = NULL
		FROM unnest($1::text[], $2::text[]) AS x(id, reason)
		WHERE a.id = x.id AND a.state = 'pending'
		RETURNING a.id`, ids, reasons)
	if err != nil {
		return "", nil, translate(err, "expire approval requests")
	}
	expired, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(expired) == 0 {
		return owner, nil, translate(err, "expire approval requests")
	}
	aps, err := approvalStore(r).approvals(ctx, "read expired approval requests", `id = ANY($1) ORDER BY requested_at, id`, expired)
	return owner, aps, err
}
