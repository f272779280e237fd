package policy

import (
	"context"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/auth"
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
)

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
}

// SkippedServer is an enabled server a request left out because it is
// unreachable.
type SkippedServer struct {
	Label  string
	Health Health
	// Tools are what the server would have offered.
	Tools ServerTools
}

// MaxHealthErrorLen bounds the stored reason of a failure.
const MaxHealthErrorLen = 500

// healthError is a failure's reason as stored: one line, bounded.
func healthError(reason string) string {
	reason = strings.Join(strings.Fields(reason), " ")
	if utf8.RuneCountInString(reason) > MaxHealthErrorLen {
		r := []rune(reason)
		reason = string(r[:MaxHealthErrorLen-1]) + "…"
	}
	if reason == "" {
		reason = "unknown error"
	}
	return reason
}

// discoveryCause is a discovery error without the "could not list tools at
// URL: " prefix the discoverer puts before the cause: the server's health
// is shown beside its URL.
func discoveryCause(srv Server, msg string) string {
	return strings.TrimPrefix(msg, "could not list tools at "+MaskURL(srv.URL)+": ")
}

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

// ServerFailed records that a turn found the server unreachable: the model's
// provider could not list its tools or reach it for a call. serverURL is the
// server's URL as the request sent it; a server pointed elsewhere since
// keeps its health. A server deleted meanwhile is not an error.
func (s *Service) ServerFailed(ctx context.Context, label, serverURL, reason string) error {
	reason = MaskURLIn(reason, serverURL)
	err := s.store.Repo().MarkUnreachable(ctx, label, serverURL, healthError(reason), s.now())
	if err == nil {
		s.log.WarnContext(ctx, "MCP server unreachable: it is left out of requests until it answers again",
			"server_id", label, "error", reason)
	}
	return err
}

// RecheckUnreachable runs discovery again for the enabled unreachable
// servers not checked for every, at most limit of them, and returns their
// labels. Each server is claimed in the database before it is checked, so
// of several replicas only one re-checks it per interval.
func (s *Service) RecheckUnreachable(ctx context.Context, every time.Duration, limit int) ([]string, error) {
	labels, err := s.store.Repo().ClaimRechecks(ctx, every, limit)
	if err != nil {
		return nil, err
	}
	for _, label := range labels {
		if _, err := s.refresh(auth.WithUser(ctx, auth.System), label); err != nil && ctx.Err() == nil {
			s.log.DebugContext(ctx, "MCP server still unreachable", "server_id", label, "error", err)
		} else if err == nil {
			s.log.InfoContext(ctx, "MCP server reachable again: it is offered to the model again", "server_id", label)
		}
	}
	return labels, nil
}

// RecheckBatch is how many unreachable servers one round of the background
// re-check takes on, so a long list of dead servers cannot tie it up.
const RecheckBatch = 8

// RunRechecks re-checks unreachable servers until ctx ends: each one again
// when its last check is every old. It looks twice per interval, so a
// server is re-checked between every and 1.5 × every after its last check.
func (s *Service) RunRechecks(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(max(every/2, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := s.RecheckUnreachable(ctx, every, RecheckBatch); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "re-checking unreachable MCP servers failed", "error", err)
		}
	}
}
