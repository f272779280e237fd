package config

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoad_Defaults(t *testing.T) {
	got, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{ListenAddr: "127.0.0.1:8080", DatabaseURL: DefaultDatabaseURL, CreateDatabase: true,
		LogLevel: slog.LevelInfo, LogFormat: "text", DiscoveryTimeout: 10 * time.Second,
		MaxBodyBytes: 1 << 20, ShutdownTimeout: 10 * time.Second,
		OpenAIModel: "gpt-5-mini", OpenAIMaxRetries: 2, ToolLayout: "default", HealthRecheck: 30 * time.Second,
		Discovery: Discovery{ToolNameMaxBytes: 256, ToolDescriptionMaxBytes: 64 << 10, ToolSchemaMaxBytes: 256 << 10, ToolListMaxBytes: 8 << 20,
			ListTimeLimit: 3 * time.Second, HealthCheck: 5 * time.Minute, HealthFailures: 3,
			PrelistMaxAge: 5 * time.Second, PrelistTimeLimit: 2 * time.Second},
		Face:        Face{DefinitionMaxAge: 2 * time.Second, CallTimeout: time.Minute, CallMaxBytes: 8 << 20, HoldTimeout: 10 * time.Minute},
		ApprovalTTL: 30 * time.Minute,
		Upstream:    Upstream{FirstByteTimeout: time.Minute, IdleTimeout: 5 * time.Minute, MaxIdleConns: 256, IdleConnTimeout: 90 * time.Second, MaxToolEntries: 128}, SSEHeartbeat: 15 * time.Second,
		EmulatorAddr: "127.0.0.1:8091", DemoMCPAddr: "127.0.0.1:8090", OfflineDemo: true}
	want.AllowedHosts = []string{"127.0.0.1", "localhost", "::1"} // ALLOWED_HOSTS: LISTEN_ADDR's host first
	want.UserMaxConcurrentTurns, want.UserMessagesPerMinute = 4, 30
	host, _ := os.Hostname()
	want.Replica = Replica{ID: host + "-" + strconv.Itoa(os.Getpid()), LeaseTTL: 15 * time.Second}
	want.Secrets = Secrets{KeyFile: ".toolgate/secrets.key"} // SECRETS_KEY unset: offline uses the key file
	want.Auth = Auth{Mode: "local", IdleTimeout: 12 * time.Hour, MaxAge: 7 * 24 * time.Hour, CacheTTL: 10 * time.Second,
		OIDCRedirectURL: "http://127.0.0.1:8080/api/auth/oidc/callback", OIDCGroupsClaim: "groups"}
	want.Webhooks = Webhooks{PublicURL: "http://127.0.0.1:8080", MaxAttempts: 6, RetryBase: 30 * time.Second, Timeout: 10 * time.Second}
	want.Route = Route{Mode: RouteGateway, Reason: "offline: the built-in emulator calls Toolgate's MCP face on this machine", TokenTTL: 15 * time.Minute}
	if !got.Offline() {
		t.Error("no OPENAI_API_KEY must mean offline")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestLoad_ReportsEveryProblem(t *testing.T) {
	_, err := Load(env(map[string]string{"LISTEN_ADDR": "8080", "DATABASE_URL": "mysql://x", "LOG_LEVEL": "loud",
		"LOG_FORMAT": "xml", "DATABASE_CREATE": "perhaps", "DISCOVERY_TIMEOUT": "-1s", "MAX_BODY_BYTES": "12",
		"OPENAI_BASE_URL": "api.openai.com", "OPENAI_MAX_RETRIES": "many", "MCP_TOOL_LAYOUT": "grouped", "SSE_HEARTBEAT": "1m",
		"EMULATOR_ADDR": "8091", "OFFLINE_DEMO": "maybe", "USER_MAX_CONCURRENT_TURNS": "0", "USER_MESSAGES_PER_MINUTE": "lots",
		"APPROVAL_TTL": "30s"}))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	for _, key := range []string{"LISTEN_ADDR", "DATABASE_URL", "LOG_LEVEL", "LOG_FORMAT", "DATABASE_CREATE", "DISCOVERY_TIMEOUT", "MAX_BODY_BYTES",
		"OPENAI_BASE_URL", "OPENAI_MAX_RETRIES", "MCP_TOOL_LAYOUT", "SSE_HEARTBEAT", "EMULATOR_ADDR", "OFFLINE_DEMO",
		"USER_MAX_CONCURRENT_TURNS", "USER_MESSAGES_PER_MINUTE", "APPROVAL_TTL"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error does not mention %s:\n%s", key, err)
		}
	}
}

func TestLogValue_MasksDatabasePassword(t *testing.T) {
	c, err := Load(env(map[string]string{"DATABASE_URL": "postgres://app:hunter2secret@db:5432/toolgate"}))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("config", "config", c)
	if strings.Contains(b.String(), "hunter2secret") || !strings.Contains(b.String(), "app:") {
		t.Errorf("logged config = %s", b.String())
	}
}

func TestLogValue_MasksAPIKey(t *testing.T) {
	c, err := Load(env(map[string]string{"OPENAI_API_KEY": "sk-proj-verysecretvalue1234", "SECRETS_KEY": testSecretsKey}))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("config", "config", c)
	if strings.Contains(b.String(), "verysecret") || c.Offline() {
		t.Errorf("logged config = %s (offline %v)", b.String(), c.Offline())
	}
}

func TestLoad_UpstreamTimeouts(t *testing.T) {
	got, err := Load(env(map[string]string{"UPSTREAM_FIRST_BYTE_TIMEOUT": "90s", "UPSTREAM_IDLE_TIMEOUT": "15m"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Upstream{FirstByteTimeout: 90 * time.Second, IdleTimeout: 15 * time.Minute, MaxIdleConns: 256, IdleConnTimeout: 90 * time.Second, MaxToolEntries: 128}); got.Upstream != want {
		t.Errorf("Upstream = %+v, want %+v", got.Upstream, want)
	}
	for _, bad := range []string{"60", "soon", "0s", "-5m", "500ms", "2h"} {
		_, err := Load(env(map[string]string{"UPSTREAM_FIRST_BYTE_TIMEOUT": bad, "UPSTREAM_IDLE_TIMEOUT": bad}))
		if err == nil {
			t.Errorf("timeouts %q accepted", bad)
			continue
		}
		for _, key := range []string{"UPSTREAM_FIRST_BYTE_TIMEOUT", "UPSTREAM_IDLE_TIMEOUT"} {
			if want := key + " must be a duration from 1s to 1h"; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), strconv.Quote(bad)) {
				t.Errorf("%s=%q: error does not say what to fix:\n%s", key, bad, err)
			}
		}
	}
}

func TestLoad_ApprovalTTL(t *testing.T) {
	got, err := Load(env(map[string]string{"APPROVAL_TTL": "2h"}))
	if err != nil {
		t.Fatal(err)
	}
	if got.ApprovalTTL != 2*time.Hour {
		t.Errorf("APPROVAL_TTL=2h loaded as %v", got.ApprovalTTL)
	}
	for _, bad := range []string{"59s", "169h", "30", "soon"} {
		if _, err := Load(env(map[string]string{"APPROVAL_TTL": bad})); err == nil || !strings.Contains(err.Error(), "APPROVAL_TTL") {
			t.Errorf("APPROVAL_TTL=%q: got %v, want an error naming APPROVAL_TTL", bad, err)
		}
	}
}

// TestLoad_AuthCacheTTL: AUTH_CACHE_TTL takes a duration up to 1m, or 0
// (off); anything else is refused with its name and what to set.
func TestLoad_AuthCacheTTL(t *testing.T) {
	for raw, want := range map[string]time.Duration{"0": 0, "500ms": 500 * time.Millisecond, "1m": time.Minute} {
		got, err := Load(env(map[string]string{"AUTH_CACHE_TTL": raw}))
		if err != nil || got.Auth.CacheTTL != want {
			t.Errorf("AUTH_CACHE_TTL=%s loaded as %v, %v; want %v", raw, got.Auth.CacheTTL, err, want)
		}
	}
	for _, bad := range []string{"61s", "1h", "-1s", "10", "soon"} {
		if _, err := Load(env(map[string]string{"AUTH_CACHE_TTL": bad})); err == nil || !strings.Contains(err.Error(), "AUTH_CACHE_TTL") {
			t.Errorf("AUTH_CACHE_TTL=%q: got %v, want an error naming AUTH_CACHE_TTL", bad, err)
		}
	}
}
