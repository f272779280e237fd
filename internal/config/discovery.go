package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"
)

// Discovery bounds what Toolgate takes from an MCP server's tool listing
// and when a server is left out of requests (docs/mcp-servers.md,
// "When an MCP server is down", and docs/configuration.md).
type Discovery struct {
	ToolNameMaxBytes        int           // MCP_TOOL_NAME_MAX_BYTES
	ToolDescriptionMaxBytes int           // MCP_TOOL_DESCRIPTION_MAX_BYTES (also the title)
	ToolSchemaMaxBytes      int           // MCP_TOOL_SCHEMA_MAX_BYTES
	ToolListMaxBytes        int           // MCP_TOOL_LIST_MAX_BYTES: all answers of one discovery, as read
	ListTimeLimit           time.Duration // MCP_LIST_TIME_LIMIT: slower listing makes a server slow (0: off)
	HealthCheck             time.Duration // MCP_HEALTH_CHECK: how often reachable servers are checked (0: off)
	HealthFailures          int           // MCP_HEALTH_FAILURES: failed calls in a row that make a server unreachable
	PrelistMaxAge           time.Duration // MCP_PRELIST_MAX_AGE: direct mode reuses a server's listing this long (conversation/prelist)
	PrelistTimeLimit        time.Duration // MCP_PRELIST_TIME_LIMIT: direct mode waits this long for one server's listing
}

func loadDiscovery(get func(string, string) string, discoveryTimeout time.Duration, errs *[]string) Discovery {
	size := func(key string, def, lo, hi int) int {
		raw := get(key, strconv.Itoa(def))
		n, err := strconv.Atoi(raw)
		if err != nil || n < lo || n > hi {
			*errs = append(*errs, fmt.Sprintf("%s must be a whole number of bytes from %d to %d (got %q)", key, lo, hi, raw))
		}
		return n
	}
	d := Discovery{
		ToolNameMaxBytes:        size("MCP_TOOL_NAME_MAX_BYTES", 256, 64, 512),
		ToolDescriptionMaxBytes: size("MCP_TOOL_DESCRIPTION_MAX_BYTES", 64<<10, 1024, 16<<20),
		ToolSchemaMaxBytes:      size("MCP_TOOL_SCHEMA_MAX_BYTES", 256<<10, 1024, 16<<20),
		ToolListMaxBytes:        size("MCP_TOOL_LIST_MAX_BYTES", 8<<20, 64<<10, 256<<20),
	}
	if d.ToolListMaxBytes < max(d.ToolDescriptionMaxBytes, d.ToolSchemaMaxBytes) {
		*errs = append(*errs, "MCP_TOOL_LIST_MAX_BYTES must be at least MCP_TOOL_DESCRIPTION_MAX_BYTES and MCP_TOOL_SCHEMA_MAX_BYTES")
	}

	const limitKey, limitDef = "MCP_LIST_TIME_LIMIT", "3s"
	raw := get(limitKey, limitDef)
	var err error
	if d.ListTimeLimit, err = time.ParseDuration(raw); raw == "0" || (err == nil && d.ListTimeLimit == 0) {
		d.ListTimeLimit = 0
	} else if err != nil || d.ListTimeLimit < 100*time.Millisecond || d.ListTimeLimit >= discoveryTimeout {
		*errs = append(*errs, fmt.Sprintf("%s must be 0 (off) or a duration from 100ms up to DISCOVERY_TIMEOUT (%s), such as %s (got %q)",
			limitKey, discoveryTimeout, limitDef, raw))
	}

	const checkKey, checkDef = "MCP_HEALTH_CHECK", "5m"
	raw = get(checkKey, checkDef)
	if d.HealthCheck, err = time.ParseDuration(raw); raw == "0" || (err == nil && d.HealthCheck == 0) {
		d.HealthCheck = 0
	} else if err != nil || d.HealthCheck < 10*time.Second || d.HealthCheck > 24*time.Hour {
		*errs = append(*errs, fmt.Sprintf("%s must be 0 (off) or a duration from 10s to 24h, such as %s (got %q)", checkKey, checkDef, raw))
	}

	raw = get("MCP_HEALTH_FAILURES", "3")
	if d.HealthFailures, err = strconv.Atoi(raw); err != nil || d.HealthFailures < 1 || d.HealthFailures > 100 {
		*errs = append(*errs, fmt.Sprintf("MCP_HEALTH_FAILURES must be a whole number from 1 to 100 (got %q)", raw))
	}
	loadPrelist(get, discoveryTimeout, &d, errs)
	return d
}

// LogValue shows the settings by their variables' names.
func (d Discovery) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int("mcp_tool_name_max_bytes", d.ToolNameMaxBytes),
		slog.Int("mcp_tool_description_max_bytes", d.ToolDescriptionMaxBytes),
		slog.Int("mcp_tool_schema_max_bytes", d.ToolSchemaMaxBytes),
		slog.Int("mcp_tool_list_max_bytes", d.ToolListMaxBytes),
		slog.Duration("mcp_list_time_limit", d.ListTimeLimit),
		slog.Duration("mcp_health_check", d.HealthCheck),
		slog.Int("mcp_health_failures", d.HealthFailures),
		slog.Duration("mcp_prelist_max_age", d.PrelistMaxAge),
		slog.Duration("mcp_prelist_time_limit", d.PrelistTimeLimit),
	)
}
