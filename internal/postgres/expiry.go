package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/conversation"
)

// ExpiringConversations lists up to limit conversations with no running
// turn that hold a pending approval request older than ttl.
func (r convRepo) ExpiringConversations(ctx context.Context, ttl time.Duration, limit int) ([]string, error) {
	rows, err := r.q.Query(ctx, `SELECT a.conversation_id FROM approval_requests a
		JOIN conversations c ON c.id = a.conversation_id
		WHERE a.state = 'pending' AND a.requested_at < clock_timestamp() - make_interval(secs => $1)
		  AND c.active_turn IS NULL
		GROUP BY a.conversation_id ORDER BY min(a.requested_at) LIMIT $2`, ttl.Seconds(), limit)
	if err != nil {
		return nil, translate(err, "list conversations with expiring approval requests")
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, translate(err, "list conversations with expiring approval requests")
}

// ExpireApprovals locks the conversation, if no turn runs in it, and
// expires its pending approval requests older than ttl with reason, in one
// conditional UPDATE: a request another replica (or a decision) settled
// first is not touched, so each expires at most once. It returns the
// conversation's owner and the requests it expired, as stored. Call it in
// a transaction.
func (r convRepo) ExpireApprovals(ctx context.Context, conversationID string, ttl time.Duration, reason string) (string, []conversation.Approval, error) {
	var owner string
	err := r.q.QueryRow(ctx, `SELECT coalesce(owner_id, '') FROM conversations WHERE id = $1 AND active_turn IS NULL`+lockConversation,
		conversationID).Scan(&owner)
	if err == pgx.ErrNoRows {
		return "", nil, nil // deleted, or a turn started since: its end settles what it must
	}
	if err != nil {
		return "", nil, translate(err, "lock a conversation to expire its approval requests")
	}
	rows, err := r.q.Query(ctx, `UPDATE approval_requests SET state = 'expired', decided_at = clock_timestamp(), reason = $3,
			decided_by = NULL, decided_by_id = NULL
		WHERE conversation_id = $1 AND state = 'pending' AND requested_at < clock_timestamp() - make_interval(secs => $2)
		RETURNING id`, conversationID, ttl.Seconds(), reason)
	if err != nil {
		return "", nil, translate(err, "expire approval requests")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(ids) == 0 {
		return owner, nil, translate(err, "expire approval requests")
	}
	aps, err := r.approvals(ctx, "read expired approval requests", `id = ANY($1) ORDER BY requested_at, id`, ids)
	return owner, aps, err
}
