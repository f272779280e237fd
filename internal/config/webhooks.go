package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Webhooks is the delivery schedule of outbound webhooks and the address
// their links point to.
type Webhooks struct {
	// PublicURL (PUBLIC_URL) is where people open Toolgate, for the links
	// in webhook payloads; default http://LISTEN_ADDR (localhost for
	// 0.0.0.0 or ::).
	PublicURL string
	// MaxAttempts (WEBHOOK_MAX_ATTEMPTS, 1 to 20, default 6): tries before
	// a delivery is marked failed.
	MaxAttempts int
	// RetryBase (WEBHOOK_RETRY_BASE, default 30s): the wait after the
	// first failure, tripled after each next one (±20%, at most an hour).
	RetryBase time.Duration
	// Timeout (WEBHOOK_TIMEOUT, 1s to 60s, default 10s): limit on one request.
	Timeout time.Duration
}

func loadWebhooks(get func(string, string) string, listenAddr string, errs *[]string) Webhooks {
	w := Webhooks{PublicURL: strings.TrimRight(get("PUBLIC_URL", DefaultPublicURL(listenAddr)), "/")}
	if u, err := url.Parse(w.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		*errs = append(*errs, fmt.Sprintf("PUBLIC_URL must be the http(s) address people open Toolgate at, such as https://toolgate.example.com (got %q)", w.PublicURL))
	}
	raw := get("WEBHOOK_MAX_ATTEMPTS", "6")
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > 20 {
		*errs = append(*errs, fmt.Sprintf("WEBHOOK_MAX_ATTEMPTS must be a whole number from 1 to 20 (got %q)", raw))
	}
	w.MaxAttempts = n
	w.RetryBase = duration(get, "WEBHOOK_RETRY_BASE", "30s", errs)
	w.Timeout = duration(get, "WEBHOOK_TIMEOUT", "10s", errs)
	if w.Timeout > 0 && (w.Timeout < time.Second || w.Timeout > time.Minute) {
		*errs = append(*errs, fmt.Sprintf("WEBHOOK_TIMEOUT must be from 1s to 60s (got %q)", get("WEBHOOK_TIMEOUT", "")))
	}
	return w
}

// DefaultPublicURL is PUBLIC_URL's default for a LISTEN_ADDR.
func DefaultPublicURL(listenAddr string) string {
	host, port, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return "http://localhost:8080"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}
