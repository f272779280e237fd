// Package idempotencydb is the Postgres store of the chat routes'
// Idempotency-Key (table idempotency_keys). The turn that a key's request
// opens records itself on the key inside internal/postgres, in the
// transaction that opens it.
package idempotencydb

import (
	"bytes"
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/idempotency"
	"github.com/toolgate/toolgate/internal/postgres"
)

// Store keeps the chat routes' idempotency keys (table idempotency_keys),
// shared by every replica.
type Store struct{ pool *pgxpool.Pool }

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Reserve claims key for userID's request whose body hashes to hash. Keys
// older than ttl are deleted first (every user's: they no longer match).
// It returns reserved true when the key was free and is now held in flight
// by this request; otherwise the key as held (reserved false), for the
// caller to compare hashes and replay or refuse.
//
// A key in flight whose holder's lease ran out (its replica died, or lost
// the database for longer than the lease), asked for with the same hash,
// is settled first: if its request started no turn, nothing ran and the key
// is reserved for this request; if it did and the turn has ended, the key
// is completed with the turn's stored events (all but text deltas) and
// returned done, so the repeat gets that stream; while the turn still runs
// (its takeover closes it within TURN_LEASE_TTL) it stays in flight.
func (s *Store) Reserve(ctx context.Context, userID, key string, hash []byte, ttl time.Duration, hold idempotency.Hold) (idempotency.Key, bool, error) {
	if _, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(secs => $1)`,
		ttl.Seconds()); err != nil {
		return idempotency.Key{}, false, postgres.Translate(err, "expire idempotency keys")
	}
	var holder *string
	var lease *float64
	if hold.Holder != "" {
		holder = &hold.Holder
		secs := hold.Lease.Seconds()
		lease = &secs
	}
	// A key released (or settled) between the failed insert and the read
	// is free again: try once more.
	for range 4 {
		tag, err := s.pool.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, state, holder, lease_expires_at)
			VALUES ($1, $2, $3, 'in_flight', $4, clock_timestamp() + make_interval(secs => $5)) ON CONFLICT (user_id, key) DO NOTHING`,
			userID, key, hash, holder, lease)
		if err != nil {
			return idempotency.Key{}, false, postgres.Translate(err, "reserve idempotency key")
		}
		if tag.RowsAffected() == 1 {
			return idempotency.Key{State: idempotency.InFlight, RequestHash: hash}, true, nil
		}
		var k idempotency.Key
		var conv, events, oldHolder, turn *string
		var lapsed bool
		err = s.pool.QueryRow(ctx, `SELECT state, request_hash, conversation_id, events::text, created_at, holder, turn_id,
				coalesce(lease_expires_at < clock_timestamp(), false)
			FROM idempotency_keys WHERE user_id = $1 AND key = $2`, userID, key).
			Scan(&k.State, &k.RequestHash, &conv, &events, &k.CreatedAt, &oldHolder, &turn, &lapsed)
		if postgres.NoRows(err) {
			continue
		}
		if err != nil {
			return idempotency.Key{}, false, postgres.Translate(err, "read idempotency key")
		}
		if conv != nil {
			k.ConversationID = *conv
		}
		if events != nil {
			k.Events = []byte(*events)
		}
		if k.State != idempotency.InFlight || !lapsed || oldHolder == nil || !bytes.Equal(k.RequestHash, hash) {
			return k, false, nil
		}
		settled, err := s.settleLapsed(ctx, userID, key, *oldHolder, conv, turn)
		if err != nil {
			return idempotency.Key{}, false, err
		}
		if !settled {
			return k, false, nil // its turn still runs
		}
	}
	return idempotency.Key{}, false, apperr.New(apperr.Conflict, "idempotency_key_in_flight",
		"another request with this Idempotency-Key is being handled right now; send it again in a moment")
}

// settleLapsed settles a key in flight whose holder's lease ran out: freed
// when its request started no turn, completed with the turn's stored
// events when it did and the turn ended. false: the turn still runs.
func (s *Store) settleLapsed(ctx context.Context, userID, key, holder string, conv, turn *string) (bool, error) {
	if turn == nil && conv != nil {
		return false, nil // recorded by an older Toolgate: the turn's id is not known
	}
	if turn == nil {
		_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND state = 'in_flight'
			AND holder = $3 AND turn_id IS NULL AND lease_expires_at < clock_timestamp()`, userID, key, holder)
		return true, postgres.Translate(err, "free an idempotency key whose request died")
	}
	var running bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND active_turn = $2)`, *conv, *turn).Scan(&running)
	if err != nil {
		return false, postgres.Translate(err, "read the turn of an idempotency key")
	}
	if running {
		return false, nil
	}
	_, err = s.pool.Exec(ctx, `UPDATE idempotency_keys SET state = 'done', completed_at = now(),
			events = (SELECT coalesce(json_agg(json_build_object('id', e.id, 'event', e.event, 'data', e.data) ORDER BY e.id), '[]'::json)
				FROM conversation_events e WHERE e.conversation_id = $4 AND e.turn_id = $5 AND e.event <> 'text.delta')
		WHERE user_id = $1 AND key = $2 AND state = 'in_flight' AND holder = $3`, userID, key, holder, *conv, *turn)
	return true, postgres.Translate(err, "answer an idempotency key from its turn's events")
}

// Renew extends the lease of a key holder still holds in flight; false
// when it no longer does (it was settled after its lease ran out).
func (s *Store) Renew(ctx context.Context, userID, key, holder string, lease time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET lease_expires_at = clock_timestamp() + make_interval(secs => $4)
		WHERE user_id = $1 AND key = $2 AND state = 'in_flight' AND holder = $3`, userID, key, holder, lease.Seconds())
	return tag.RowsAffected() == 1, postgres.Translate(err, "renew idempotency key")
}

// Started records which conversation the in-flight request's turn runs in.
func (s *Store) Started(ctx context.Context, userID, key, holder, conversationID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET conversation_id = $3
		WHERE user_id = $1 AND key = $2 AND state = 'in_flight' AND holder IS NOT DISTINCT FROM nullif($4, '')`,
		userID, key, conversationID, holder)
	return postgres.Translate(err, "update idempotency key")
}

// Complete stores the stream the first request answered (events, JSON) and
// marks the key done: repeats replay it.
func (s *Store) Complete(ctx context.Context, userID, key, holder string, events []byte) error {
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET state = 'done', events = $3::json, completed_at = now()
		WHERE user_id = $1 AND key = $2 AND state = 'in_flight' AND holder IS NOT DISTINCT FROM nullif($4, '')`,
		userID, key, string(events), holder)
	return postgres.Translate(err, "complete idempotency key")
}

// Release frees a key still in flight: its request was refused before
// anything started, so a repeat may run.
func (s *Store) Release(ctx context.Context, userID, key, holder string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND state = 'in_flight'
		AND holder IS NOT DISTINCT FROM nullif($3, '')`, userID, key, holder)
	return postgres.Translate(err, "release idempotency key")
}
