package config

import (
	"strings"
	"testing"
	"time"
)

func TestLoad_Webhooks(t *testing.T) {
	got, err := Load(env(map[string]string{"PUBLIC_URL": "https://toolgate.example.com/", "WEBHOOK_MAX_ATTEMPTS": "3",
		"WEBHOOK_RETRY_BASE": "5s", "WEBHOOK_TIMEOUT": "2s"}))
	if err != nil {
		t.Fatal(err)
	}
	want := Webhooks{PublicURL: "https://toolgate.example.com", MaxAttempts: 3, RetryBase: 5 * time.Second, Timeout: 2 * time.Second}
	if got.Webhooks != want {
		t.Errorf("webhooks %+v, want %+v", got.Webhooks, want)
	}
	if got, _ := Load(env(map[string]string{"LISTEN_ADDR": "0.0.0.0:9000"})); got.Webhooks.PublicURL != "http://localhost:9000" {
		t.Errorf("PUBLIC_URL default for 0.0.0.0: %q", got.Webhooks.PublicURL)
	}
}

func TestLoad_WebhooksRefusesBadValues(t *testing.T) {
	_, err := Load(env(map[string]string{"PUBLIC_URL": "toolgate.example.com", "WEBHOOK_MAX_ATTEMPTS": "0",
		"WEBHOOK_RETRY_BASE": "soon", "WEBHOOK_TIMEOUT": "5m"}))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, key := range []string{"PUBLIC_URL", "WEBHOOK_MAX_ATTEMPTS", "WEBHOOK_RETRY_BASE", "WEBHOOK_TIMEOUT"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error does not mention %s:\n%s", key, err)
		}
	}
}
