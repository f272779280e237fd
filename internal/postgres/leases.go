package postgres

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/conversation"
)

// Renew extends the leases owner holds on turns by ttl and returns
// the turns it still holds: a turn missing from the answer was taken over
// (or ended) and must stop.
func (r leaseStore) Renew(ctx context.Context, owner string, turns []string, ttl time.Duration) ([]string, error) {
	if len(turns) == 0 {
		return nil, nil
	}
	// The rows are locked in id order, as PutMany locks them: the two
	// run side by side on every replica and must not deadlock.
	rows, err := r.q.Query(ctx, `WITH held AS (
			SELECT id FROM conversations WHERE lease_owner = $1 AND active_turn = ANY($2) ORDER BY id FOR UPDATE
		)
		UPDATE conversations c SET lease_expires_at = clock_timestamp() + make_interval(secs => $3)
		FROM held WHERE c.id = held.id AND c.lease_owner = $1 AND c.active_turn = ANY($2) RETURNING c.active_turn`, owner, turns, ttl.Seconds())
	if err != nil {
		return nil, translate(err, "renew turn leases")
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return held, translate(err, "renew turn leases")
}

// ExpiredTurns lists up to limit running turns whose lease ran out (or
// that an older Toolgate started without one).
func (r leaseStore) ExpiredTurns(ctx context.Context, limit int) ([]conversation.RunningTurn, error) {
	rows, err := r.q.Query(ctx, `SELECT id, coalesce(owner_id, ''), active_turn, coalesce(lease_owner, '') FROM conversations
		WHERE active_turn IS NOT NULL AND (lease_expires_at IS NULL OR lease_expires_at < clock_timestamp())
		ORDER BY lease_expires_at NULLS FIRST LIMIT $1`, limit)
	if err != nil {
		return nil, translate(err, "list expired turn leases")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (conversation.RunningTurn, error) {
		var t conversation.RunningTurn
		err := row.Scan(&t.ConversationID, &t.OwnerID, &t.Turn, &t.LeaseOwner)
		return t, err
	})
	return out, translate(err, "list expired turn leases")
}

// LockExpiredTurn locks the conversation if turn still runs in it on an
// expired lease; false when another replica took it over, it ended, or its
// lease was renewed. Call it in a transaction. It also moves the
// conversation's event counter past TakeoverGap ids: the replica that ran
// the turn numbered its text deltas itself and streamed them before
// storing them, so ids up to that far may be in a client's hands though
// stored nowhere, and the events of the takeover must not reuse them.
func (r leaseStore) LockExpiredTurn(ctx context.Context, conversationID, turn string) (bool, error) {
	var ok bool
	err := r.q.QueryRow(ctx, `UPDATE conversations SET event_seq = event_seq + `+strconv.Itoa(conversation.TakeoverGap)+`
		WHERE id = $1 AND active_turn = $2 AND (lease_expires_at IS NULL OR lease_expires_at < clock_timestamp())
		RETURNING true`, conversationID, turn).Scan(&ok)
	if noRows(err) {
		return false, nil
	}
	return ok, translate(err, "lock an expired turn")
}

// WithdrawAbandoned withdraws the pending requests of held calls no
// replica holds any longer, and marks not_run the approved ones whose call
// never reached the gate before their holder stopped (a minute past its
// lease: a live holder runs its call within moments of the approval), each
// with its audit entry.
func (r leaseStore) WithdrawAbandoned(ctx context.Context, reason string) (int64, error) {
	tag, err := r.q.Exec(ctx, `WITH closed AS (
			UPDATE approval_requests a SET state = 'withdrawn', decided_at = now(), reason = $1
			FROM conversations c
			WHERE a.conversation_id = c.id AND c.kind = 'agent' AND a.state = 'pending' AND a.held_until < clock_timestamp()
			RETURNING a.id, a.conversation_id, a.server_label, a.tool_name, 'pending' AS was, 'withdrawn' AS state),
		lost AS (
			UPDATE approval_requests a SET state = 'not_run'
			FROM conversations c
			WHERE a.conversation_id = c.id AND c.kind = 'agent' AND a.state = 'approved'
			  AND a.held_until < clock_timestamp() - interval '1 minute'
			  AND NOT EXISTS (SELECT 1 FROM gateway_calls g WHERE g.approval_request_id = a.id)
			RETURNING a.id, a.conversation_id, a.server_label, a.tool_name, 'approved' AS was, 'not_run' AS state)
		INSERT INTO audit_log (actor, action, server_label, tool_name, before, after, conversation_id)
		SELECT 'toolgate', 'approval.decide', server_label, tool_name,
			jsonb_build_object('approval_request_id', id, 'state', was),
			jsonb_build_object('approval_request_id', id, 'conversation_id', conversation_id, 'state', state,
				'reason', $1::text, 'by', 'toolgate', 'held_call', true),
			conversation_id
		FROM (SELECT * FROM closed UNION ALL SELECT * FROM lost) x ORDER BY id`, reason)
	if err != nil {
		return 0, translate(err, "withdraw abandoned held calls")
	}
	return tag.RowsAffected(), nil
}

func (r leaseStore) SupersedeOrphans(ctx context.Context, reason string) (int64, error) {
	// Each gets its approval.decide audit entry (Toolgate closed it) in
	// the same statement.
	tag, err := r.q.Exec(ctx, `WITH closed AS (
			UPDATE approval_requests a SET state = 'superseded', decided_at = now(), reason = $1
			FROM conversations c
			WHERE a.conversation_id = c.id AND a.state = 'pending' AND c.active_turn IS NULL AND c.kind = 'chat'
			  AND c.last_response_id IS DISTINCT FROM a.response_id
			RETURNING a.id, a.conversation_id, a.server_label, a.tool_name)
		INSERT INTO audit_log (actor, action, server_label, tool_name, before, after, conversation_id)
		SELECT 'toolgate', 'approval.decide', server_label, tool_name,
			jsonb_build_object('approval_request_id', id, 'state', 'pending'),
			jsonb_build_object('approval_request_id', id, 'conversation_id', conversation_id, 'state', 'superseded',
				'reason', $1::text, 'by', 'turn_end'),
			conversation_id
		FROM closed ORDER BY id`, reason)
	if err != nil {
		return 0, translate(err, "supersede approval requests of responses that never completed")
	}
	return tag.RowsAffected(), nil
}
