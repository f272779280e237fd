package config

import (
	"strings"
	"testing"
	"time"
)

func TestLoad_HealthRecheck(t *testing.T) {
	got, err := Load(env(map[string]string{"MCP_HEALTH_RECHECK": "2m"}))
	if err != nil {
		t.Fatal(err)
	}
	if got.HealthRecheck != 2*time.Minute {
		t.Errorf("HealthRecheck = %v, want 2m", got.HealthRecheck)
	}
	if def, _ := Load(env(nil)); def.HealthRecheck != 30*time.Second {
		t.Errorf("default HealthRecheck = %v, want 30s", def.HealthRecheck)
	}
	for _, bad := range []string{"30", "0s", "500ms", "2h", "soon", "-1m"} {
		_, err := Load(env(map[string]string{"MCP_HEALTH_RECHECK": bad}))
		if err == nil || !strings.Contains(err.Error(), "MCP_HEALTH_RECHECK must be a duration from 1s to 1h") {
			t.Errorf("MCP_HEALTH_RECHECK=%q: %v, want it refused", bad, err)
		}
	}
}
