package postgres

import (
	"context"

	"github.com/toolgate/toolgate/internal/apperr"
)

// ClaimIdempotencyKey records, in the transaction that opens turn, that the
// request holding userID's key (as holder) started it in conversationID;
// a key its holder no longer holds (settled after its lease ran out) is a
// conflict, and the turn does not start.
func (r convRepo) ClaimIdempotencyKey(ctx context.Context, userID, key, holder, conversationID, turn string) error {
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
