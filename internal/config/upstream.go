package config

import (
	"fmt"
	"strconv"
	"time"
)

// Upstream bounds how long Toolgate waits on the model's provider.
type Upstream struct {
	// FirstByteTimeout (UPSTREAM_FIRST_BYTE_TIMEOUT) is the longest wait
	// from sending a request to the first event of its answer. OpenAI sends
	// response.created at once, before it lists MCP tools or thinks, so a
	// minute of silence means the request is stuck.
	FirstByteTimeout time.Duration
	// IdleTimeout (UPSTREAM_IDLE_TIMEOUT) is the longest gap between two
	// events once the answer streams. The provider sends nothing while a
	// remote MCP tool runs or while the model reasons without a summary,
	// so it must outlast the slowest tool call: 5 minutes by default.
	IdleTimeout time.Duration
	// MaxIdleConns (UPSTREAM_MAX_IDLE_CONNS, default 256) is how many
	// kept-alive connections to the provider wait for the next request: size
	// it to the streams open at once, or requests dial (and shake hands over
	// TLS) again.
	MaxIdleConns int
	// MaxConnsPerHost (UPSTREAM_MAX_CONNS_PER_HOST, default 0: no cap) caps
	// the connections to the provider; streams beyond it wait for one.
	MaxConnsPerHost int
	// IdleConnTimeout (UPSTREAM_IDLE_CONN_TIMEOUT, default 90s) closes a
	// connection unused for that long.
	IdleConnTimeout time.Duration
	// MaxToolEntries (UPSTREAM_MAX_TOOL_ENTRIES, default 128) bounds the
	// tools entries of one request (one per MCP server offering tools, two
	// in the split layout): a turn that would send more is refused with
	// request_too_large before anything is sent. 128 is the nearest limit
	// OpenAI documents (tools per assistant, functions per Chat Completions
	// request); raise it only for a provider known to take more.
	MaxToolEntries int
}

// Bounds of the upstream timeouts: shorter ones would cut healthy answers,
// longer ones keep a dead stream (and the person's turn slot) for too long.
const (
	minUpstreamTimeout = time.Second
	maxUpstreamTimeout = time.Hour
)

func loadUpstream(get func(string, string) string, errs *[]string) Upstream {
	return Upstream{
		FirstByteTimeout: upstreamTimeout(get, "UPSTREAM_FIRST_BYTE_TIMEOUT", "60s", errs),
		IdleTimeout:      upstreamTimeout(get, "UPSTREAM_IDLE_TIMEOUT", "5m", errs),
		MaxIdleConns:     upstreamCount(get, "UPSTREAM_MAX_IDLE_CONNS", "256", 1, errs),
		MaxConnsPerHost:  upstreamCount(get, "UPSTREAM_MAX_CONNS_PER_HOST", "0", 0, errs),
		IdleConnTimeout:  upstreamTimeout(get, "UPSTREAM_IDLE_CONN_TIMEOUT", "90s", errs),
		MaxToolEntries:   upstreamCount(get, "UPSTREAM_MAX_TOOL_ENTRIES", "128", 1, errs),
	}
}

// maxUpstreamConns bounds the pool settings: far more than one process can
// stream at once, small enough to catch a typo.
const maxUpstreamConns = 100000

func upstreamCount(get func(string, string) string, key, def string, least int, errs *[]string) int {
	raw := get(key, def)
	n, err := strconv.Atoi(raw)
	if err != nil || n < least || n > maxUpstreamConns {
		*errs = append(*errs, fmt.Sprintf("%s must be a whole number from %d to %d (got %q)", key, least, maxUpstreamConns, raw))
	}
	return n
}

func upstreamTimeout(get func(string, string) string, key, def string, errs *[]string) time.Duration {
	raw := get(key, def)
	d, err := time.ParseDuration(raw)
	if err != nil || d < minUpstreamTimeout || d > maxUpstreamTimeout {
		*errs = append(*errs, fmt.Sprintf("%s must be a duration from 1s to 1h with a unit, such as %s (got %q)", key, def, raw))
	}
	return d
}
