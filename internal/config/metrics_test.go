package config

import (
	"log/slog"
	"strings"
	"testing"
)

func TestLoad_MetricsToken(t *testing.T) {
	good := "0123456789abcdef0123456789abcdef"
	c, err := Load(env(map[string]string{"METRICS_TOKEN": "  " + good + " "}))
	if err != nil {
		t.Fatal(err)
	}
	if c.MetricsToken != good {
		t.Errorf("MetricsToken = %q, want %q", c.MetricsToken, good)
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("config", "config", c)
	if strings.Contains(b.String(), good) || !strings.Contains(b.String(), "metrics_token=(set)") {
		t.Errorf("logged config = %s", b.String())
	}

	if c, err := Load(env(nil)); err != nil || c.MetricsToken != "" {
		t.Errorf("unset: MetricsToken %q, err %v; want off", c.MetricsToken, err)
	}
	for _, bad := range []string{"short-token", "0123456789abcdef 0123456789abcdef", "0123456789abcdef0123456789abcdé"} {
		_, err := Load(env(map[string]string{"METRICS_TOKEN": bad}))
		if err == nil || !strings.Contains(err.Error(), "METRICS_TOKEN must be at least 24 visible ASCII characters") {
			t.Errorf("METRICS_TOKEN=%q: err = %v", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), bad) {
			t.Errorf("the error repeats the token: %v", err)
		}
	}
}
