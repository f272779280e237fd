package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/apperr"
)

// Idempotency key states.
const (
	IdempotencyInFlight = "in_flight" // the first request still runs
	IdempotencyDone     = "done"      // Events holds its stream
)

// IdempotencyKey is a key already held by a user: what the request that
// first used it sent (RequestHash) and, once it ended, what it answered.
type IdempotencyKey struct {
	State          string // IdempotencyInFlight or IdempotencyDone
	RequestHash    []byte
	ConversationID string // "" until the first request's turn started
	Events         []byte // IdempotencyDone: the stream, as Complete stored it (JSON)
	CreatedAt      time.Time
}

// IdempotencyStore keeps the chat routes' idempotency keys (table
// idempotency_keys), shared by every replica.
type IdempotencyStore struct{ pool *pgxpool.Pool }

// NewIdempotencyStore returns an IdempotencyStore on pool.
func NewIdempotencyStore(pool *pgxpool.Pool) *IdempotencyStore { return &IdempotencyStore{pool: pool} }

// Reserve claims key for userID's request whose body hashes to hash. Keys
// older than ttl are deleted first (every user's: they no longer match).
// It returns reserved true when the key was free and is now held in flight
// by this request; otherwise the key as held (reserved false), for the
// caller to compare hashes and replay or refuse.
func (s *IdempotencyStore) Reserve(ctx context.Context, userID, key string, hash []byte, ttl time.Duration) (IdempotencyKey, bool, error) {
	if _, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(secs => $1)`,
		ttl.Seconds()); err != nil {
		return IdempotencyKey{}, false, translate(err, "expire idempotency keys")
	}
	// A key released between the failed insert and the read is free again:
	// try once more.
	for range 3 {
		tag, err := s.pool.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, state)
			VALUES ($1, $2, $3, 'in_flight') ON CONFLICT (user_id, key) DO NOTHING`, userID, key, hash)
		if err != nil {
			return IdempotencyKey{}, false, translate(err, "reserve idempotency key")
		}
		if tag.RowsAffected() == 1 {
			return IdempotencyKey{State: IdempotencyInFlight, RequestHash: hash}, true, nil
		}
		var k IdempotencyKey
		var conv, events *string
		err = s.pool.QueryRow(ctx, `SELECT state, request_hash, conversation_id, events::text, created_at
			FROM idempotency_keys WHERE user_id = $1 AND key = $2`, userID, key).
			Scan(&k.State, &k.RequestHash, &conv, &events, &k.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return IdempotencyKey{}, false, translate(err, "read idempotency key")
		}
		if conv != nil {
			k.ConversationID = *conv
		}
		if events != nil {
			k.Events = []byte(*events)
		}
		return k, false, nil
	}
	return IdempotencyKey{}, false, apperr.New(apperr.Conflict, "idempotency_key_in_flight",
		"another request with this Idempotency-Key is being handled right now; send it again in a moment")
}

// Started records which conversation the in-flight request's turn runs in.
func (s *IdempotencyStore) Started(ctx context.Context, userID, key, conversationID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET conversation_id = $3
		WHERE user_id = $1 AND key = $2 AND state = 'in_flight'`, userID, key, conversationID)
	return translate(err, "update idempotency key")
}

// Complete stores the stream the first request answered (events, JSON) and
// marks the key done: repeats replay it.
func (s *IdempotencyStore) Complete(ctx context.Context, userID, key string, events []byte) error {
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET state = 'done', events = $3::json, completed_at = now()
		WHERE user_id = $1 AND key = $2 AND state = 'in_flight'`, userID, key, string(events))
	return translate(err, "complete idempotency key")
}

// Release frees a key still in flight: its request was refused before
// anything started, so a repeat may run.
func (s *IdempotencyStore) Release(ctx context.Context, userID, key string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND state = 'in_flight'`, userID, key)
	return translate(err, "release idempotency key")
}
