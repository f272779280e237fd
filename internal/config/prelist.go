package config

import (
	"fmt"
	"time"
)

// loadPrelist reads how direct mode lists servers before a request (docs/mcp-servers.md,
// "Direct mode"): MCP_PRELIST_MAX_AGE, how long a server's listing is
// reused (0: list before every request), and MCP_PRELIST_TIME_LIMIT, how
// long a request waits for one server (past it, that server's tools that
// would run unasked ask).
func loadPrelist(get func(string, string) string, discoveryTimeout time.Duration, d *Discovery, errs *[]string) {
	const ageKey, ageDef = "MCP_PRELIST_MAX_AGE", "5s"
	raw := get(ageKey, ageDef)
	var err error
	if d.PrelistMaxAge, err = time.ParseDuration(raw); raw == "0" {
		d.PrelistMaxAge, err = 0, nil
	}
	if err != nil || d.PrelistMaxAge < 0 || d.PrelistMaxAge > 5*time.Minute {
		*errs = append(*errs, fmt.Sprintf("%s must be 0 (list before every request) or a duration up to 5m, such as %s (got %q)", ageKey, ageDef, raw))
	}

	const limitKey, limitDef = "MCP_PRELIST_TIME_LIMIT", "2s"
	raw = get(limitKey, limitDef)
	if d.PrelistTimeLimit, err = time.ParseDuration(raw); err != nil || d.PrelistTimeLimit < 100*time.Millisecond || d.PrelistTimeLimit > discoveryTimeout {
		*errs = append(*errs, fmt.Sprintf("%s must be a duration from 100ms up to DISCOVERY_TIMEOUT (%s), such as %s (got %q)",
			limitKey, discoveryTimeout, limitDef, raw))
	}
}
