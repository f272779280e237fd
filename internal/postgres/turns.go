package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
)

// Start marks turn as running under owner's lease for ttl; NotFound if
// the conversation is missing.
func (r turnStore) Start(ctx context.Context, id, turn, owner string, ttl time.Duration) error {
	// The text deltas of the turns before go now: every message they sent
	// is an item (whole, or partial when cut), which a stream replaying
	// them gets instead; the ids of the other events stay. Not at a turn's
	// end, when a stream may still be reading them.
	tag, err := r.q.Exec(ctx, `WITH pruned AS (
			DELETE FROM conversation_events WHERE conversation_id = $1 AND event = 'text.delta'
		)
		UPDATE conversations SET active_turn = $2, active_turn_at = now(), updated_at = now(),
			lease_owner = $3, lease_expires_at = clock_timestamp() + make_interval(secs => $4)
		WHERE id = $1`, id, turn, owner, ttl.Seconds())
	if err != nil {
		return translate(err, "start turn")
	}
	if tag.RowsAffected() == 0 {
		return conversationNotFound(id)
	}
	return nil
}

// End is not an error when the conversation was deleted meanwhile.
// Continue records that turn, still running, continues from
// response: the conversation's last response moves on while the turn keeps
// the conversation (and its lease). False when the turn no longer runs in it.
func (r turnStore) Continue(ctx context.Context, id, turn, response string) (bool, error) {
	tag, err := r.q.Exec(ctx, `UPDATE conversations SET last_response_id = $3, updated_at = now()
		WHERE id = $1 AND active_turn = $2`, id, turn, response)
	if err != nil {
		return false, translate(err, "continue turn")
	}
	return tag.RowsAffected() == 1, nil
}

func (r turnStore) End(ctx context.Context, id, turn, lastResponse string) error {
	// SET expressions see the row as it was, so each CASE tests the old turn.
	_, err := r.q.Exec(ctx, `UPDATE conversations SET
			active_turn      = CASE WHEN active_turn = $2 THEN NULL ELSE active_turn END,
			active_turn_at   = CASE WHEN active_turn = $2 THEN NULL ELSE active_turn_at END,
			lease_owner      = CASE WHEN active_turn = $2 THEN NULL ELSE lease_owner END,
			lease_expires_at = CASE WHEN active_turn = $2 THEN NULL ELSE lease_expires_at END,
			last_response_id = CASE WHEN active_turn = $2 AND $3 <> '' THEN $3 ELSE last_response_id END,
			updated_at       = now()
		WHERE id = $1`, id, turn, lastResponse)
	return translate(err, "end turn")
}

// UserLoad serialises the turns owner starts: it takes a lock on owner
// that the transaction holds until it ends, then counts, so two requests
// starting turns at once are counted one after the other. It must run in a
// transaction (outside one the lock would end with the statement).
func (r turnStore) UserLoad(ctx context.Context, owner string, window time.Duration) (conversation.UserLoad, error) {
	b := &pgx.Batch{}
	queueUserLoad(b, owner, window)
	br := r.q.SendBatch(ctx, b)
	defer br.Close() //nolint:errcheck // the results' errors are read below
	l, err := readUserLoad(br)
	if err != nil {
		return l, err
	}
	return l, translate(br.Close(), "count the user's turns and messages")
}

// queueUserLoad queues UserLoad's two statements on b: the lock and the
// count are two, so the count's snapshot is taken once the lock is held (a
// turn start that committed while this one waited is counted), sent
// together: one round trip. readUserLoad reads their results.
func queueUserLoad(b *pgx.Batch, owner string, window time.Duration) {
	b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended('toolgate.turns:' || $1::text, 0))`, owner)
	// Both counts have an index of their own (00025): the user's running
	// conversations, and the messages sent inside the window (joined to
	// their conversation for its owner). The window ends at
	// statement_timestamp(), which an index can use (clock_timestamp() is
	// volatile: with it every message was read).
	b.Queue(`SELECT
			(SELECT count(*) FROM conversations WHERE owner_id = $1 AND active_turn IS NOT NULL),
			count(i.*), min(i.created_at), clock_timestamp()
		FROM conversation_items i JOIN conversations c ON c.id = i.conversation_id
		WHERE i.type = 'user_message' AND i.created_at > statement_timestamp() - make_interval(secs => $2)
		  AND c.owner_id = $1`,
		owner, window.Seconds())
}

func readUserLoad(br pgx.BatchResults) (conversation.UserLoad, error) {
	var l conversation.UserLoad
	if _, err := br.Exec(); err != nil {
		return l, translate(err, "lock the user's turns")
	}
	err := br.QueryRow().Scan(&l.Running, &l.Messages, &l.OldestMessage, &l.Now)
	return l, translate(err, "count the user's turns and messages")
}

// ClaimIdempotencyKey records, in the transaction that opens turn, that the
// request holding userID's key (as holder) started it in conversationID;
// a key its holder no longer holds (settled after its lease ran out) is a
// conflict, and the turn does not start.
func (r turnStore) ClaimIdempotencyKey(ctx context.Context, userID, key, holder, conversationID, turn string) error {
	tag, err := r.q.Exec(ctx, `UPDATE idempotency_keys SET conversation_id = $4, turn_id = $5
		WHERE user_id = $1 AND key = $2 AND state = 'in_flight' AND holder = $3 AND turn_id IS NULL`,
		userID, key, holder, conversationID, turn)
	if err != nil {
		return translate(err, "record the turn of an idempotency key")
	}
	if tag.RowsAffected() != 1 {
		return apperr.New(apperr.Conflict, "idempotency_key_in_flight",
			"this request's Idempotency-Key lease ran out before its turn started (the database was too slow), so nothing was run; send it again")
	}
	return nil
}
