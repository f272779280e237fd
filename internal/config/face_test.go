package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLoad_Face(t *testing.T) {
	got, err := Load(env(map[string]string{"MCP_DEFINITION_MAX_AGE": "0", "MCP_CALL_TIMEOUT": "5s", "MCP_CALL_MAX_BYTES": "1048576", "MCP_HOLD_TIMEOUT": "90s"}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Face{DefinitionMaxAge: 0, CallTimeout: 5 * time.Second, CallMaxBytes: 1 << 20, HoldTimeout: 90 * time.Second}, got.Face); diff != "" {
		t.Errorf("face (-want +got):\n%s", diff)
	}
	_, err = Load(env(map[string]string{"MCP_DEFINITION_MAX_AGE": "-1s", "MCP_CALL_TIMEOUT": "10ms", "MCP_CALL_MAX_BYTES": "12", "MCP_HOLD_TIMEOUT": "0"}))
	for _, key := range []string{"MCP_DEFINITION_MAX_AGE", "MCP_CALL_TIMEOUT", "MCP_CALL_MAX_BYTES", "MCP_HOLD_TIMEOUT"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("error does not name %s: %v", key, err)
		}
	}
}
