package postgres

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
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

func (r turnStore) StillRuns(ctx context.Context, id, turn string) error {
	// Held: it goes with the next statement, or the COMMIT, and its error
	// (TG409) aborts what follows it in that batch.
	return hold(ctx, r.q, "end turn", nil, `SELECT toolgate_turn_still_runs($1, $2)`, id, turn)
}

// End clears the running turn (see conversation.Turns).
func (r turnStore) End(ctx context.Context, id, turn, lastResponse string) error {
	// SET expressions see the row as it was, so each CASE tests the old turn.
	// Held: in a transaction it goes with the next statement, or the COMMIT.
	return hold(ctx, r.q, "end turn", nil, `UPDATE conversations SET
			active_turn      = CASE WHEN active_turn = $2 THEN NULL ELSE active_turn END,
			active_turn_at   = CASE WHEN active_turn = $2 THEN NULL ELSE active_turn_at END,
			lease_owner      = CASE WHEN active_turn = $2 THEN NULL ELSE lease_owner END,
			lease_expires_at = CASE WHEN active_turn = $2 THEN NULL ELSE lease_expires_at END,
			last_response_id = CASE WHEN active_turn = $2 AND $3 <> '' THEN $3 ELSE last_response_id END,
			updated_at       = now()
		WHERE id = $1`, id, turn, lastResponse)
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
