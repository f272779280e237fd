package config

import (
	"strings"
	"testing"
	"time"
)

func TestLoad_Discovery(t *testing.T) {
	def, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Discovery{ToolNameMaxBytes: 256, ToolDescriptionMaxBytes: 64 << 10, ToolSchemaMaxBytes: 256 << 10, ToolListMaxBytes: 8 << 20,
		ListTimeLimit: 3 * time.Second, HealthCheck: 5 * time.Minute, HealthFailures: 3,
		PrelistMaxAge: 5 * time.Second, PrelistTimeLimit: 2 * time.Second}
	if def.Discovery != want {
		t.Errorf("defaults %+v, want %+v", def.Discovery, want)
	}
	got, err := Load(env(map[string]string{"MCP_TOOL_LIST_MAX_BYTES": "1048576", "MCP_LIST_TIME_LIMIT": "0", "MCP_HEALTH_CHECK": "0",
		"MCP_HEALTH_FAILURES": "5", "MCP_TOOL_DESCRIPTION_MAX_BYTES": "2048"}))
	if err != nil {
		t.Fatal(err)
	}
	if d := got.Discovery; d.ToolListMaxBytes != 1<<20 || d.ListTimeLimit != 0 || d.HealthCheck != 0 || d.HealthFailures != 5 || d.ToolDescriptionMaxBytes != 2048 {
		t.Errorf("configured %+v", d)
	}
	for raw, want := range map[string]time.Duration{"0": 0, "0s": 0, "750ms": 750 * time.Millisecond, "5m": 5 * time.Minute} {
		got, err := Load(env(map[string]string{"MCP_PRELIST_MAX_AGE": raw}))
		if err != nil || got.Discovery.PrelistMaxAge != want {
			t.Errorf("MCP_PRELIST_MAX_AGE=%q: %v, %v; want %v", raw, got.Discovery.PrelistMaxAge, err, want)
		}
	}
	for _, bad := range []string{"-1s", "soon", "5"} {
		if _, err := Load(env(map[string]string{"MCP_PRELIST_MAX_AGE": bad})); err == nil ||
			!strings.Contains(err.Error(), `MCP_PRELIST_MAX_AGE must be 0 (list before every request) or a duration up to 5m, such as 5s (got "`+bad+`")`) {
			t.Errorf("MCP_PRELIST_MAX_AGE=%q: %v, want a sentence naming it and what to set", bad, err)
		}
	}
	for key, bad := range map[string]string{
		"MCP_TOOL_LIST_MAX_BYTES":        "100",
		"MCP_TOOL_NAME_MAX_BYTES":        "huge",
		"MCP_TOOL_DESCRIPTION_MAX_BYTES": "0",
		"MCP_TOOL_SCHEMA_MAX_BYTES":      "-1",
		"MCP_LIST_TIME_LIMIT":            "10s", // not below DISCOVERY_TIMEOUT
		"MCP_HEALTH_CHECK":               "1s",
		"MCP_HEALTH_FAILURES":            "0",
		"MCP_PRELIST_MAX_AGE":            "10m",
		"MCP_PRELIST_TIME_LIMIT":         "11s", // over DISCOVERY_TIMEOUT
	} {
		if _, err := Load(env(map[string]string{key: bad})); err == nil || !strings.Contains(err.Error(), key+" must be") {
			t.Errorf("%s=%q: %v, want it refused naming the variable", key, bad, err)
		}
	}
}
