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
		ListTimeLimit: 3 * time.Second, HealthCheck: 5 * time.Minute, HealthFailures: 3}
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
	for key, bad := range map[string]string{
		"MCP_TOOL_LIST_MAX_BYTES":        "100",
		"MCP_TOOL_NAME_MAX_BYTES":        "huge",
		"MCP_TOOL_DESCRIPTION_MAX_BYTES": "0",
		"MCP_TOOL_SCHEMA_MAX_BYTES":      "-1",
		"MCP_LIST_TIME_LIMIT":            "10s", // not below DISCOVERY_TIMEOUT
		"MCP_HEALTH_CHECK":               "1s",
		"MCP_HEALTH_FAILURES":            "0",
	} {
		if _, err := Load(env(map[string]string{key: bad})); err == nil || !strings.Contains(err.Error(), key+" must be") {
			t.Errorf("%s=%q: %v, want it refused naming the variable", key, bad, err)
		}
	}
}
