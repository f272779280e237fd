package config

import (
	"fmt"
	"time"
)

// Bounds of MCP_HEALTH_RECHECK: more often would have every replica dial
// dead servers all the time, less often keeps a server that came back out
// of requests for too long.
const (
	minHealthRecheck = time.Second
	maxHealthRecheck = time.Hour
)

// loadHealthRecheck reads MCP_HEALTH_RECHECK: how long after its last check
// an unreachable MCP server is checked again (discovery, by one replica),
// so that it is offered again once it answers.
func loadHealthRecheck(get func(string, string) string, errs *[]string) time.Duration {
	const key, def = "MCP_HEALTH_RECHECK", "30s"
	raw := get(key, def)
	d, err := time.ParseDuration(raw)
	if err != nil || d < minHealthRecheck || d > maxHealthRecheck {
		*errs = append(*errs, fmt.Sprintf("%s must be a duration from 1s to 1h with a unit, such as %s (got %q)", key, def, raw))
	}
	return d
}
