package policy

import (
	"context"
	"sync"
)

// ToolSnapshot is what grouping tools into requests reads of the workspace,
// as one consistent read at Version (policy_version): the enabled servers
// with their known tools and workspace policies, the settings and the
// argument rule lists. Personal policies and grants are per person and not
// part of it.
//
// A server here carries only what a request needs (label, URL, description,
// headers, defaults, first discovery, health status, since and error,
// approval TTL); a tool only what Resolve reads (name, digest, readOnlyHint,
// first-seen and changed times, workspace policy, lock and what a never was
// granted for), plus its definition only where a never was granted for
// another one (to say what changed).
type ToolSnapshot struct {
	Version  int64
	Settings Settings
	Servers  []SnapshotServer
	Rules    []RuleList
}

// SnapshotServer is one enabled server of a ToolSnapshot with its tools,
// in no particular order (grouping sorts).
type SnapshotServer struct {
	Server Server
	Tools  []Tool
}

// snapshot is a ToolSnapshot with every server grouped for nobody in
// particular (no personal policy, no grant): most servers of most turns
// are exactly that.
type snapshot struct {
	ToolSnapshot
	base []ServerTools // by index of Servers
}

func newSnapshot(s ToolSnapshot) *snapshot {
	out := &snapshot{ToolSnapshot: s, base: make([]ServerTools, len(s.Servers))}
	for i := range s.Servers {
		out.base[i] = out.group(i, nil, nil)
	}
	return out
}

// group groups server i's tools with personal policies mine and grants allowed.
func (s *snapshot) group(i int, mine []UserPolicy, allowed map[string]GrantRef) ServerTools {
	srv := s.Servers[i]
	g := GroupTools(srv.Server, s.Settings, srv.Tools, mine, allowed)
	g.withRules(ruledTools(s.Rules, srv.Server.Label))
	return g
}

// toolCache is the replica's copy of the last ToolSnapshot it read. It is
// used only at the version the database says is current (or a later one),
// so a change committed anywhere is in force for the next turn here.
type toolCache struct {
	mu      sync.Mutex
	cur     *snapshot
	loading chan struct{} // closed when the load in progress ends; nil if none
}

// at returns a snapshot at version or later, loading one when the copy is
// older. Concurrent callers share one load.
func (c *toolCache) at(ctx context.Context, version int64, load func(context.Context) (ToolSnapshot, error)) (*snapshot, error) {
	for {
		c.mu.Lock()
		if c.cur != nil && c.cur.Version >= version {
			s := c.cur
			c.mu.Unlock()
			return s, nil
		}
		if wait := c.loading; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		c.loading = done
		c.mu.Unlock()
		var next *snapshot
		raw, err := load(ctx)
		if err == nil {
			next = newSnapshot(raw) // grouping outside the lock: readers of the current copy go on
		}
		c.mu.Lock()
		if next != nil && (c.cur == nil || next.Version > c.cur.Version) {
			c.cur = next
		}
		cur := c.cur
		c.loading = nil
		close(done)
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		// Read after version was: at version or later.
		return cur, nil
	}
}

// version is the version of the copy, 0 without one.
func (c *toolCache) version() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		return 0
	}
	return c.cur.Version
}
