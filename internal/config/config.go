// Package config reads Toolgate's configuration from the environment.
package config

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config is every setting of the API server. Each field's env variable and
// default is listed in README.md.
type Config struct {
	ListenAddr       string        // LISTEN_ADDR
	DatabaseURL      string        // DATABASE_URL
	CreateDatabase   bool          // DATABASE_CREATE: create the database when it is missing
	LogLevel         slog.Level    // LOG_LEVEL: debug, info, warn, error
	LogFormat        string        // LOG_FORMAT: text or json
	DiscoveryTimeout time.Duration // DISCOVERY_TIMEOUT: limit on one MCP tools/list discovery
	MaxBodyBytes     int64         // MAX_BODY_BYTES: limit on a request body
	ShutdownTimeout  time.Duration // SHUTDOWN_TIMEOUT: how long in-flight requests get on SIGTERM
}

// DefaultDatabaseURL is the local Postgres the run command uses.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/toolgate?sslmode=disable"

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
		ListenAddr:  get("LISTEN_ADDR", "127.0.0.1:8080"),
		DatabaseURL: get("DATABASE_URL", DefaultDatabaseURL),
		LogFormat:   get("LOG_FORMAT", "text"),
	}
	if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
		errs = append(errs, fmt.Sprintf("LISTEN_ADDR must be host:port, e.g. 127.0.0.1:8080 (got %q)", c.ListenAddr))
	}
	if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		errs = append(errs, "DATABASE_URL must be a postgres:// URL, e.g. "+DefaultDatabaseURL)
	}
	if err := c.LogLevel.UnmarshalText([]byte(get("LOG_LEVEL", "info"))); err != nil {
		errs = append(errs, fmt.Sprintf("LOG_LEVEL must be debug, info, warn or error (got %q)", getenv("LOG_LEVEL")))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Sprintf("LOG_FORMAT must be text or json (got %q)", c.LogFormat))
	}
	var err error
	if c.CreateDatabase, err = strconv.ParseBool(get("DATABASE_CREATE", "true")); err != nil {
		errs = append(errs, fmt.Sprintf("DATABASE_CREATE must be true or false (got %q)", getenv("DATABASE_CREATE")))
	}
	c.DiscoveryTimeout = duration(get, "DISCOVERY_TIMEOUT", "10s", &errs)
	c.ShutdownTimeout = duration(get, "SHUTDOWN_TIMEOUT", "10s", &errs)
	if c.MaxBodyBytes, err = strconv.ParseInt(get("MAX_BODY_BYTES", "1048576"), 10, 64); err != nil || c.MaxBodyBytes < 1024 {
		errs = append(errs, fmt.Sprintf("MAX_BODY_BYTES must be a whole number of bytes, at least 1024 (got %q)", getenv("MAX_BODY_BYTES")))
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("invalid configuration:\n  %s", strings.Join(errs, "\n  "))
	}
	return c, nil
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
	)
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid)"
	}
	return u.Redacted()
}
