// Package registry keeps the MCP servers Toolgate knows: registering and
// changing them, discovering their tools, and their health.
package registry

import (
	"log/slog"
	"time"

	"github.com/toolgate/toolgate/internal/policy"
)

// Servers registers, changes and removes MCP servers and discovers their
// tools.
type Servers struct {
	store    policy.Store
	discover policy.Discoverer
	policies *policy.Policies  // the tools with the caller's policies; a server's change
	urls     policy.URLChecker // nil: no URL policy at registration
	log      *slog.Logger
	now      func() time.Time
	health   policy.HealthOptions
	limits   policy.ToolLimits // what one listing may hold (RecordListed; the Discoverer has its own)
}

// Health records whether each server is reachable and checks them again
// in the background.
type Health struct {
	store    policy.Store
	discover policy.Discoverer
	servers  *Servers // a re-check discovers again
	log      *slog.Logger
	now      func() time.Time
	health   policy.HealthOptions
}

// New returns the servers and their health over store, discovering tools
// with d, set up by opts (its Limits, Health and URLs).
func New(store policy.Store, d policy.Discoverer, policies *policy.Policies, log *slog.Logger, opts policy.Options) (*Servers, *Health) {
	health := opts.Health
	if health == (policy.HealthOptions{}) {
		health = policy.DefaultHealthOptions()
	} else if health.Failures < 1 {
		health.Failures = policy.DefaultHealthFailures
	}
	s := &Servers{store: store, discover: d, policies: policies, urls: opts.URLs, log: log, now: time.Now,
		health: health, limits: opts.Limits.OrDefaults()}
	return s, &Health{store: store, discover: d, servers: s, log: log, now: time.Now, health: health}
}
