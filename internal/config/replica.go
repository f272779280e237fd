package config

import (
	"fmt"
	"os"
	"regexp"
	"time"
)

// Replica is what one API process needs to share a database with others.
type Replica struct {
	// ID (REPLICA_ID) names this process in turn leases and logs; default
	// the host name and process id. Two live processes must not share one.
	ID string
	// LeaseTTL (TURN_LEASE_TTL) is how long a turn outlives the replica
	// running it: the replica renews its leases every third of it, and any
	// replica closes a turn whose lease ran out as interrupted.
	LeaseTTL time.Duration
}

var replicaID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,100}$`)

func loadReplica(get func(string, string) string, errs *[]string) Replica {
	host, _ := os.Hostname()
	r := Replica{ID: get("REPLICA_ID", fmt.Sprintf("%s-%d", host, os.Getpid()))}
	if !replicaID.MatchString(r.ID) {
		*errs = append(*errs, fmt.Sprintf("REPLICA_ID must be 1 to 100 letters, digits, '.', '_', ':' or '-' (got %q)", r.ID))
	}
	raw := get("TURN_LEASE_TTL", "15s")
	d, err := time.ParseDuration(raw)
	if err != nil || d < time.Second || d > 30*time.Second {
		*errs = append(*errs, fmt.Sprintf("TURN_LEASE_TTL must be a duration from 1s to 30s with a unit, such as 15s (got %q)", raw))
	}
	r.LeaseTTL = d
	return r
}
