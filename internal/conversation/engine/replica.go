package engine

import "time"

// DefaultLeaseTTL is TURN_LEASE_TTL's default: how long a turn outlives the
// replica running it before another replica closes it.
const DefaultLeaseTTL = 15 * time.Second

// setReplica names this process among the replicas sharing the database
// and sets the lease its turns hold (Options.Replica, Options.LeaseTTL).
func (s *registry) setReplica(id string, ttl time.Duration) {
	if id != "" {
		s.replica = id
	}
	if ttl > 0 {
		s.leaseTTL = ttl
	}
}

// Replica is this process's replica id.
func (s *registry) Replica() string { return s.replica }

// LeaseTTL is TURN_LEASE_TTL: how long a turn (and an Idempotency-Key's
// request) outlives the replica running it.
func (s *registry) LeaseTTL() time.Duration { return s.leaseTTL }
