package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"
)

// Face is how the MCP face (/mcp/{server_label}, gateway mode) checks and
// forwards calls (docs/security.md, "The MCP face").
type Face struct {
	// DefinitionMaxAge (MCP_DEFINITION_MAX_AGE) is how old the listing a
	// tools/call is checked against may be; 0 lists the server at every
	// call. It is also how often tools/list refreshes in the background.
	DefinitionMaxAge time.Duration
	CallTimeout      time.Duration // MCP_CALL_TIMEOUT: one forwarded tools/call, connecting included
	CallMaxBytes     int64         // MCP_CALL_MAX_BYTES: what Toolgate reads of one call's answer
	// HoldTimeout (MCP_HOLD_TIMEOUT) is how long a call of a person's own
	// MCP client (/mcp with an API token) is held open waiting for a
	// decision before it is withdrawn.
	HoldTimeout time.Duration
}

func loadFace(get func(string, string) string, errs *[]string) Face {
	var f Face
	const ageKey, ageDef = "MCP_DEFINITION_MAX_AGE", "2s"
	raw := get(ageKey, ageDef)
	var err error
	if f.DefinitionMaxAge, err = time.ParseDuration(raw); raw == "0" {
		f.DefinitionMaxAge = 0
	} else if err != nil || f.DefinitionMaxAge < 0 || f.DefinitionMaxAge > time.Minute {
		*errs = append(*errs, fmt.Sprintf("%s must be 0 (list at every call) or a duration up to 1m, such as %s (got %q)", ageKey, ageDef, raw))
	}
	const callKey, callDef = "MCP_CALL_TIMEOUT", "60s"
	raw = get(callKey, callDef)
	if f.CallTimeout, err = time.ParseDuration(raw); err != nil || f.CallTimeout < time.Second || f.CallTimeout > 30*time.Minute {
		*errs = append(*errs, fmt.Sprintf("%s must be a duration from 1s to 30m, such as %s (got %q)", callKey, callDef, raw))
	}
	raw = get("MCP_CALL_MAX_BYTES", strconv.Itoa(8<<20))
	if f.CallMaxBytes, err = strconv.ParseInt(raw, 10, 64); err != nil || f.CallMaxBytes < 64<<10 || f.CallMaxBytes > 256<<20 {
		*errs = append(*errs, fmt.Sprintf("MCP_CALL_MAX_BYTES must be a whole number of bytes from %d to %d (got %q)", 64<<10, 256<<20, raw))
	}
	const holdKey, holdDef = "MCP_HOLD_TIMEOUT", "10m"
	raw = get(holdKey, holdDef)
	if f.HoldTimeout, err = time.ParseDuration(raw); err != nil || f.HoldTimeout < time.Second || f.HoldTimeout > 24*time.Hour {
		*errs = append(*errs, fmt.Sprintf("%s must be a duration from 1s to 24h, such as %s (got %q)", holdKey, holdDef, raw))
	}
	return f
}

// LogValue shows the settings by their variables' names.
func (f Face) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Duration("mcp_definition_max_age", f.DefinitionMaxAge),
		slog.Duration("mcp_call_timeout", f.CallTimeout),
		slog.Int64("mcp_call_max_bytes", f.CallMaxBytes),
		slog.Duration("mcp_hold_timeout", f.HoldTimeout),
	)
}
