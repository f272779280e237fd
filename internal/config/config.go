// Package config reads Toolgate's configuration from the environment.
package config

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is every setting of the API server. Each field's env variable and
// default is listed in docs/configuration.md.
type Config struct {
	ListenAddr       string        // LISTEN_ADDR
	DatabaseURL      string        // DATABASE_URL
	CreateDatabase   bool          // DATABASE_CREATE: create the database when it is missing
	LogLevel         slog.Level    // LOG_LEVEL: debug, info, warn, error
	LogFormat        string        // LOG_FORMAT: text or json
	DiscoveryTimeout time.Duration // DISCOVERY_TIMEOUT: limit on one MCP tools/list discovery
	MaxBodyBytes     int64         // MAX_BODY_BYTES: limit on a request body
	ShutdownTimeout  time.Duration // SHUTDOWN_TIMEOUT: how long in-flight requests get on SIGTERM

	OpenAIAPIKey     string        // OPENAI_API_KEY: unset means offline (the built-in emulator)
	OpenAIBaseURL    string        // OPENAI_BASE_URL: the Responses API endpoint ("" = OpenAI's, or the in-process emulator when offline)
	OpenAIModel      string        // OPENAI_MODEL
	OpenAIMaxRetries int           // OPENAI_MAX_RETRIES: retries of a 429/5xx before anything streamed
	Upstream         Upstream      // UPSTREAM_FIRST_BYTE_TIMEOUT, UPSTREAM_IDLE_TIMEOUT, UPSTREAM_MAX_IDLE_CONNS, ... (upstream.go)
	Replica          Replica       // REPLICA_ID, TURN_LEASE_TTL (replica.go)
	ApprovalTTL      time.Duration // APPROVAL_TTL: how long an approval request waits before it expires (approvals.go)
	ToolLayout       string        // MCP_TOOL_LAYOUT: default or split
	HealthRecheck    time.Duration // MCP_HEALTH_RECHECK: how often an unreachable MCP server is checked again (health.go)
	Discovery        Discovery     // MCP_TOOL_*_MAX_BYTES, MCP_LIST_TIME_LIMIT, MCP_HEALTH_CHECK, MCP_HEALTH_FAILURES (discovery.go)
	Face             Face          // MCP_DEFINITION_MAX_AGE, MCP_CALL_TIMEOUT, MCP_CALL_MAX_BYTES, MCP_HOLD_TIMEOUT (face.go)
	SSEHeartbeat     time.Duration // SSE_HEARTBEAT: interval of heartbeat comments on streams
	EmulatorAddr     string        // EMULATOR_ADDR: where the in-process emulator listens when offline
	DemoMCPAddr      string        // DEMO_MCP_ADDR: where the in-process demo MCP server listens when offline
	OfflineDemo      bool          // OFFLINE_DEMO: when offline, start the demo MCP server and register it as "demo"
	WebDir           string        // WEB_DIR: a built web app on disk served at / instead of the one embedded in the binary ("": the embedded one)
	// Per-user limits on starting turns (429 with Retry-After beyond them).
	UserMaxConcurrentTurns int // USER_MAX_CONCURRENT_TURNS: a user's conversations running a turn at once
	UserMessagesPerMinute  int // USER_MESSAGES_PER_MINUTE: messages a user may send in a window of a minute
	// AllowedHosts (ALLOWED_HOSTS, comma list) are the Host names the API
	// answers to; others get 421 (DNS rebinding). Default: the host of
	// LISTEN_ADDR (unless 0.0.0.0 or ::), localhost, 127.0.0.1, ::1.
	AllowedHosts []string
	// MetricsToken (METRICS_TOKEN) is the bearer token GET /metrics asks
	// for; "" turns /metrics off (404).
	MetricsToken string
	// DebugAddr (DEBUG_ADDR) is a loopback address serving net/http/pprof
	// on its own listener; "" (the default) serves no profiles (debug.go).
	DebugAddr string
	Auth      Auth     // AUTH_MODE and the other sign-in settings (auth.go)
	MCPNet    MCPNet   // MCP_ALLOWED_HOSTS, MCP_ALLOW_PRIVATE (secrets.go)
	Secrets   Secrets  // SECRETS_KEY, SECRETS_KEY_FILE (secrets.go)
	Webhooks  Webhooks // PUBLIC_URL, WEBHOOK_MAX_ATTEMPTS, WEBHOOK_RETRY_BASE, WEBHOOK_TIMEOUT (webhooks.go)
	Route     Route    // MCP_ROUTE, MCP_TOKEN_TTL (route.go)
}

// Offline reports whether Toolgate talks to its built-in emulator instead of
// a real model: it does whenever no API key is configured.
func (c Config) Offline() bool { return c.OpenAIAPIKey == "" }

// DefaultDatabaseURL is the local Postgres the run command uses.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/toolgate?sslmode=disable"

// DefaultListenAddr is where the API listens without LISTEN_ADDR.
const DefaultListenAddr = "127.0.0.1:8080"

// Load reads the configuration through getenv and validates it, reporting
// every problem at once.
func Load(getenv func(string) string) (Config, error) {
	get := func(key, def string) string {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			return v
		}
		return def
	}
	var errs []string
	c := Config{
		ListenAddr:  get("LISTEN_ADDR", DefaultListenAddr),
		DatabaseURL: get("DATABASE_URL", DefaultDatabaseURL),
		LogFormat:   get("LOG_FORMAT", "text"),
	}
	c.loadBasics(get, getenv, &errs)
	c.loadOpenAI(get, getenv, &errs)
	c.Upstream = loadUpstream(get, &errs)
	c.Replica = loadReplica(get, &errs)
	c.ToolLayout = get("MCP_TOOL_LAYOUT", "default")
	if c.ToolLayout != "default" && c.ToolLayout != "split" {
		errs = append(errs, fmt.Sprintf("MCP_TOOL_LAYOUT must be default or split (got %q)", c.ToolLayout))
	}
	c.HealthRecheck = loadHealthRecheck(get, &errs)
	c.Discovery = loadDiscovery(get, c.DiscoveryTimeout, &errs)
	c.Face = loadFace(get, &errs)
	c.ApprovalTTL = loadApprovalTTL(get, &errs)
	c.SSEHeartbeat = duration(get, "SSE_HEARTBEAT", "15s", &errs)
	if c.SSEHeartbeat > 15*time.Second {
		errs = append(errs, fmt.Sprintf("SSE_HEARTBEAT must be at most 15s, or proxies may close idle streams (got %q)", getenv("SSE_HEARTBEAT")))
	}
	c.loadDemo(get, getenv, &errs)
	c.WebDir = get("WEB_DIR", "")
	c.loadUserLimits(get, getenv, &errs)
	c.AllowedHosts = allowedHosts(getenv("ALLOWED_HOSTS"), c.ListenAddr, &errs)
	c.MetricsToken = metricsToken(getenv("METRICS_TOKEN"), &errs)
	c.DebugAddr = debugAddr(get("DEBUG_ADDR", ""), &errs)
	c.Auth = loadAuth(get, c.ListenAddr, &errs)
	c.MCPNet = loadMCPNet(get, &errs)
	c.Secrets = loadSecrets(get, c.Offline(), &errs)
	c.Webhooks = loadWebhooks(get, c.ListenAddr, &errs)
	c.Route = loadRoute(get, c.Offline(), c.Webhooks.PublicURL, &errs)
	if len(errs) > 0 {
		return c, fmt.Errorf("invalid configuration:\n  %s", strings.Join(errs, "\n  "))
	}
	return c, nil
}

// loadBasics checks the listen address and the database URL, and reads the
// log settings, DATABASE_CREATE, the discovery and shutdown timeouts and
// MAX_BODY_BYTES.
func (c *Config) loadBasics(get func(string, string) string, getenv func(string) string, errs *[]string) {
	if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
		*errs = append(*errs, fmt.Sprintf("LISTEN_ADDR must be host:port, e.g. 127.0.0.1:8080 (got %q)", c.ListenAddr))
	}
	if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		*errs = append(*errs, "DATABASE_URL must be a postgres:// URL, e.g. "+DefaultDatabaseURL)
	}
	if err := c.LogLevel.UnmarshalText([]byte(get("LOG_LEVEL", "info"))); err != nil {
		*errs = append(*errs, fmt.Sprintf("LOG_LEVEL must be debug, info, warn or error (got %q)", getenv("LOG_LEVEL")))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		*errs = append(*errs, fmt.Sprintf("LOG_FORMAT must be text or json (got %q)", c.LogFormat))
	}
	var err error
	if c.CreateDatabase, err = strconv.ParseBool(get("DATABASE_CREATE", "true")); err != nil {
		*errs = append(*errs, fmt.Sprintf("DATABASE_CREATE must be true or false (got %q)", getenv("DATABASE_CREATE")))
	}
	c.DiscoveryTimeout = duration(get, "DISCOVERY_TIMEOUT", "10s", errs)
	c.ShutdownTimeout = duration(get, "SHUTDOWN_TIMEOUT", "10s", errs)
	if c.MaxBodyBytes, err = strconv.ParseInt(get("MAX_BODY_BYTES", "1048576"), 10, 64); err != nil || c.MaxBodyBytes < 1024 {
		*errs = append(*errs, fmt.Sprintf("MAX_BODY_BYTES must be a whole number of bytes, at least 1024 (got %q)", getenv("MAX_BODY_BYTES")))
	}
}

// loadOpenAI reads the provider's key, base URL, model and retries.
func (c *Config) loadOpenAI(get func(string, string) string, getenv func(string) string, errs *[]string) {
	c.OpenAIAPIKey = strings.TrimSpace(getenv("OPENAI_API_KEY"))
	c.OpenAIBaseURL = get("OPENAI_BASE_URL", "")
	if c.OpenAIBaseURL != "" {
		if u, err := url.Parse(c.OpenAIBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			*errs = append(*errs, fmt.Sprintf("OPENAI_BASE_URL must be an http(s) URL such as https://api.openai.com/v1/ (got %q)", c.OpenAIBaseURL))
		}
	}
	c.OpenAIModel = get("OPENAI_MODEL", "gpt-5-mini")
	var err error
	if c.OpenAIMaxRetries, err = strconv.Atoi(get("OPENAI_MAX_RETRIES", "2")); err != nil || c.OpenAIMaxRetries < 0 || c.OpenAIMaxRetries > 10 {
		*errs = append(*errs, fmt.Sprintf("OPENAI_MAX_RETRIES must be a whole number from 0 to 10 (got %q)", getenv("OPENAI_MAX_RETRIES")))
	}
}

// loadDemo reads the offline demo's addresses and OFFLINE_DEMO.
func (c *Config) loadDemo(get func(string, string) string, getenv func(string) string, errs *[]string) {
	c.EmulatorAddr = get("EMULATOR_ADDR", "127.0.0.1:8091")
	c.DemoMCPAddr = get("DEMO_MCP_ADDR", "127.0.0.1:8090")
	for key, addr := range map[string]string{"EMULATOR_ADDR": c.EmulatorAddr, "DEMO_MCP_ADDR": c.DemoMCPAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			*errs = append(*errs, fmt.Sprintf("%s must be host:port, e.g. 127.0.0.1:0 (got %q)", key, addr))
		}
	}
	var err error
	if c.OfflineDemo, err = strconv.ParseBool(get("OFFLINE_DEMO", "true")); err != nil {
		*errs = append(*errs, fmt.Sprintf("OFFLINE_DEMO must be true or false (got %q)", getenv("OFFLINE_DEMO")))
	}
}

// loadUserLimits reads the per-user limits on turns and messages.
func (c *Config) loadUserLimits(get func(string, string) string, getenv func(string) string, errs *[]string) {
	var err error
	if c.UserMaxConcurrentTurns, err = strconv.Atoi(get("USER_MAX_CONCURRENT_TURNS", "4")); err != nil || c.UserMaxConcurrentTurns < 1 || c.UserMaxConcurrentTurns > 1000 {
		*errs = append(*errs, fmt.Sprintf("USER_MAX_CONCURRENT_TURNS must be a whole number from 1 to 1000 (got %q)", getenv("USER_MAX_CONCURRENT_TURNS")))
	}
	if c.UserMessagesPerMinute, err = strconv.Atoi(get("USER_MESSAGES_PER_MINUTE", "30")); err != nil || c.UserMessagesPerMinute < 1 || c.UserMessagesPerMinute > 10000 {
		*errs = append(*errs, fmt.Sprintf("USER_MESSAGES_PER_MINUTE must be a whole number from 1 to 10000 (got %q)", getenv("USER_MESSAGES_PER_MINUTE")))
	}
}

func duration(get func(string, string) string, key, def string, errs *[]string) time.Duration {
	d, err := time.ParseDuration(get(key, def))
	if err != nil || d <= 0 {
		*errs = append(*errs, fmt.Sprintf("%s must be a positive duration such as %s (got %q)", key, def, get(key, def)))
	}
	return d
}

// LogValue shows the configuration with secrets masked.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("listen_addr", c.ListenAddr),
		slog.String("database_url", redactURL(c.DatabaseURL)),
		slog.Bool("database_create", c.CreateDatabase),
		slog.String("log_level", c.LogLevel.String()),
		slog.String("log_format", c.LogFormat),
		slog.Duration("discovery_timeout", c.DiscoveryTimeout),
		slog.Int64("max_body_bytes", c.MaxBodyBytes),
		slog.Duration("shutdown_timeout", c.ShutdownTimeout),
		slog.Bool("offline", c.Offline()),
		slog.String("openai_api_key", maskKey(c.OpenAIAPIKey)),
		slog.String("openai_base_url", c.OpenAIBaseURL),
		slog.String("openai_model", c.OpenAIModel),
		slog.Int("openai_max_retries", c.OpenAIMaxRetries),
		slog.Duration("upstream_first_byte_timeout", c.Upstream.FirstByteTimeout),
		slog.Duration("upstream_idle_timeout", c.Upstream.IdleTimeout),
		slog.Int("upstream_max_idle_conns", c.Upstream.MaxIdleConns),
		slog.Int("upstream_max_conns_per_host", c.Upstream.MaxConnsPerHost),
		slog.Duration("upstream_idle_conn_timeout", c.Upstream.IdleConnTimeout),
		slog.String("replica_id", c.Replica.ID),
		slog.Duration("turn_lease_ttl", c.Replica.LeaseTTL),
		slog.Duration("approval_ttl", c.ApprovalTTL),
		slog.String("mcp_tool_layout", c.ToolLayout),
		slog.Duration("mcp_health_recheck", c.HealthRecheck),
		slog.Any("discovery", c.Discovery),
		slog.Any("face", c.Face),
		slog.Duration("sse_heartbeat", c.SSEHeartbeat),
		slog.String("web_dir", c.WebDir),
		slog.Int("user_max_concurrent_turns", c.UserMaxConcurrentTurns),
		slog.Int("user_messages_per_minute", c.UserMessagesPerMinute),
		slog.String("allowed_hosts", strings.Join(c.AllowedHosts, ",")),
		slog.String("metrics_token", setOrUnset(c.MetricsToken)),
		slog.String("debug_addr", c.DebugAddr),
		slog.Any("auth", c.Auth),
		slog.String("mcp_allowed_hosts", c.MCPNet.AllowedHosts),
		slog.Bool("mcp_allow_private", c.MCPNet.AllowPrivate),
		slog.Any("secrets", c.Secrets),
		slog.String("public_url", c.Webhooks.PublicURL),
		slog.Int("webhook_max_attempts", c.Webhooks.MaxAttempts),
		slog.Duration("webhook_retry_base", c.Webhooks.RetryBase),
		slog.Duration("webhook_timeout", c.Webhooks.Timeout),
		slog.Any("mcp_route", c.Route),
	)
}

// MinMetricsTokenLen is the shortest METRICS_TOKEN accepted.
const MinMetricsTokenLen = 24

// metricsToken reads METRICS_TOKEN: unset, or a token of at least
// MinMetricsTokenLen visible ASCII characters (it is compared with the
// bearer token a scraper sends).
func metricsToken(raw string, errs *[]string) string {
	tok := strings.TrimSpace(raw)
	if tok == "" {
		return ""
	}
	ok := len(tok) >= MinMetricsTokenLen
	for i := 0; ok && i < len(tok); i++ {
		ok = tok[i] > ' ' && tok[i] < 0x7f
	}
	if !ok {
		*errs = append(*errs, fmt.Sprintf("METRICS_TOKEN must be at least %d visible ASCII characters without spaces, "+
			"e.g. the output of `openssl rand -hex 32` (got %d characters); unset it to turn GET /metrics off", MinMetricsTokenLen, len(tok)))
		return ""
	}
	return tok
}

func setOrUnset(v string) string {
	if v == "" {
		return "(unset)"
	}
	return "(set)"
}

func maskKey(k string) string {
	if k == "" {
		return "(unset)"
	}
	if len(k) <= 8 {
		return "****"
	}
	return k[:3] + "…" + k[len(k)-4:]
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid)"
	}
	return u.Redacted()
}

// allowedHosts reads ALLOWED_HOSTS (host names or IP addresses, ports and
// brackets ignored, lower case), or builds the default from LISTEN_ADDR.
func allowedHosts(raw, listenAddr string, errs *[]string) []string {
	norm := func(h string) string {
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		return strings.TrimSuffix(strings.ToLower(h), ".")
	}
	var hosts []string
	add := func(h string) {
		if h != "" && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	if strings.TrimSpace(raw) == "" {
		if host, _, err := net.SplitHostPort(listenAddr); err == nil {
			if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
				add(norm(host)) // 0.0.0.0 and :: name no host a browser would use
			}
		}
		for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
			add(h)
		}
		return hosts
	}
	for _, part := range strings.Split(raw, ",") {
		part = strings.TrimSpace(part)
		h := norm(part)
		if h == "" || strings.ContainsAny(part, "/?#@ *") {
			*errs = append(*errs, fmt.Sprintf("ALLOWED_HOSTS must be a comma-separated list of host names or IP addresses "+
				"(no scheme or path), e.g. localhost,127.0.0.1,toolgate.example.com (got %q)", raw))
			return nil
		}
		add(h)
	}
	return hosts
}
