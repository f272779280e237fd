package policy

import (
	"net/url"
	"strings"
	"time"
)

// HealthStatus says whether a server could be reached the last time anyone
// tried.
type HealthStatus string

// The health states of a server.
const (
	// HealthUnknown: nobody has tried yet (discovery has not run).
	HealthUnknown HealthStatus = "unknown"
	// HealthOK: the last check reached the server.
	HealthOK HealthStatus = "ok"
	// HealthUnreachable: the last check failed; requests leave the server
	// out until a discovery or re-check reaches it again.
	HealthUnreachable HealthStatus = "unreachable"
	// HealthSlow: the last discovery listed the server's tools but took
	// longer than the listing time limit (MCP_LIST_TIME_LIMIT). The model's
	// provider lists every offered server's tools in every request, so
	// requests leave the server out until a check finds it fast again.
	HealthSlow HealthStatus = "slow"
)

// LeftOut reports whether requests leave a server in this state out.
func (s HealthStatus) LeftOut() bool { return s == HealthUnreachable || s == HealthSlow }

// Health is a server's health as stored. Failures come from Toolgate's own
// discovery and from the turns (the provider could not list the server's
// tools, or could not reach it for a call); recoveries from a discovery
// that works (a refresh, a change of the server, or the background
// re-check).
type Health struct {
	Status HealthStatus
	// Since is when the current run of failures began (unreachable only).
	Since *time.Time
	// LastError says why the last check failed (unreachable only).
	LastError string
	// CheckedAt is the last check, failed or not; OKAt the last that worked.
	CheckedAt *time.Time
	OKAt      *time.Time
	// ListMS is how long the last discovery that listed the server's tools
	// took, in milliseconds; nil before one did.
	ListMS *int
	// Failures counts the failed calls in a row the turns reported (a call
	// the model's provider could not deliver); at the threshold
	// (MCP_HEALTH_FAILURES) the server becomes unreachable.
	Failures int
}

// SkippedServer is an enabled server a request left out because it is
// unreachable or slow.
type SkippedServer struct {
	Label  string
	Health Health
	// Tools are what the server would have offered.
	Tools ServerTools
}

// HealthOptions say when a server is left out of requests.
type HealthOptions struct {
	// ListTimeLimit (MCP_LIST_TIME_LIMIT): a discovery that lists the
	// server's tools slower than this makes it slow; 0: never slow.
	ListTimeLimit time.Duration
	// Failures (MCP_HEALTH_FAILURES): failed calls in a row that make a
	// server unreachable; below 1: DefaultHealthFailures.
	Failures int
	// CheckEvery (MCP_HEALTH_CHECK): how often the background check lists
	// a reachable server's tools to measure its listing time; 0: never.
	CheckEvery time.Duration
}

// The documented defaults of HealthOptions (docs/configuration.md).
const (
	DefaultListTimeLimit  = 3 * time.Second
	DefaultHealthFailures = 3
	DefaultHealthCheck    = 5 * time.Minute
)

// DefaultHealthOptions are the options without configuration.
func DefaultHealthOptions() HealthOptions {
	return HealthOptions{ListTimeLimit: DefaultListTimeLimit, Failures: DefaultHealthFailures, CheckEvery: DefaultHealthCheck}
}

// MaxHealthErrorLen bounds the stored reason of a failure.
const MaxHealthErrorLen = 500

// MaskURLIn hides the query values of the server URL raw wherever text
// quotes it (as written or re-encoded), as MaskURL does: the provider's
// errors quote the URL it failed to reach.
func MaskURLIn(text, raw string) string {
	masked := MaskURL(raw)
	if masked == raw {
		return text
	}
	pairs := []string{raw, masked}
	if u, err := url.Parse(raw); err == nil {
		mu, _ := url.Parse(masked)
		pairs = append(pairs, u.RawQuery, mu.RawQuery)
		if q := u.Query().Encode(); q != u.RawQuery {
			pairs = append(pairs, q, mu.RawQuery)
		}
	}
	return strings.NewReplacer(pairs...).Replace(text)
}
