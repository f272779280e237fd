// Package idempotency holds the types of the chat routes' Idempotency-Key
// store: the port is internal/http's IdempotencyStore, internal/postgres
// implements it (table idempotency_keys). Both import these types from
// here, so the HTTP package does not import the store.
package idempotency

import "time"

// Key states.
const (
	InFlight = "in_flight" // the first request still runs
	Done     = "done"      // Events holds its stream
)

// Key is a key already held by a user: what the request that first used it
// sent (RequestHash) and, once it ended, what it answered.
type Key struct {
	State          string // InFlight or Done
	RequestHash    []byte
	ConversationID string // "" until the first request's turn started
	Events         []byte // Done: the stream, as Complete stored it (JSON)
	CreatedAt      time.Time
}

// Hold is how a request holds the key it reserves: Holder names the request
// (its replica and a random part), Lease how long the key is held unless
// Renew extends it. A zero hold never lapses (the key stays in flight until
// Complete, Release or its expiry).
type Hold struct {
	Holder string
	Lease  time.Duration
}
