package policy

import (
	"context"
	"errors"
	"fmt"
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

// slowReason says why a listing that took took makes the server slow, or
// "" when it does not.
func (s *Service) slowReason(took time.Duration) string {
	limit := s.health.ListTimeLimit
	if limit <= 0 || took <= limit {
		return ""
	}
	return fmt.Sprintf("listing its tools took %s, more than the limit of %s (MCP_LIST_TIME_LIMIT)", took.Round(100*time.Millisecond), limit)
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
	err := s.store.Repo().Health.MarkUnreachable(ctx, label, serverURL, healthError(reason), s.now())
	if err == nil {
		s.log.WarnContext(ctx, "MCP server unreachable: it is left out of requests until it answers again",
			"server_id", label, "error", reason)
	}
	return err
}

// CallFailed records that the model's provider could not deliver a call
// to the server. One failed call says little (the call may just have been
// slow), so the server stays offered until HealthOptions.Failures calls in
// a row failed; then it is unreachable. A call that works, or a discovery,
// starts the count again.
func (s *Service) CallFailed(ctx context.Context, label, serverURL, reason string) error {
	reason = MaskURLIn(reason, serverURL)
	n, down, err := s.store.Repo().Health.CountFailure(ctx, label, serverURL,
		healthError(fmt.Sprintf("%d calls in a row failed; the last: %s", s.failures(), reason)), s.now(), s.failures())
	switch {
	case err != nil:
	case down:
		s.log.WarnContext(ctx, "MCP server unreachable: it is left out of requests until it answers again",
			"server_id", label, "failures", n, "error", reason)
	case n > 0:
		s.log.InfoContext(ctx, "a call to an MCP server failed; it stays offered until more calls in a row fail",
			"server_id", label, "failures", n, "threshold", s.failures(), "error", reason)
	}
	return err
}

// CallWorked records that a call reached the server: its failures in a
// row start again from zero.
func (s *Service) CallWorked(ctx context.Context, label, serverURL string) error {
	return s.store.Repo().Health.ResetFailures(ctx, label, serverURL)
}

func (s *Service) failures() int {
	if s.health.Failures < 1 {
		return DefaultHealthFailures
	}
	return s.health.Failures
}

// CheckReachable lists the tools of the enabled reachable servers not
// checked for every, at most limit of them, to measure how long the
// listing takes: a server slower than the limit becomes slow (left out
// until it is fast again), one that fails counts a failure. Nothing is
// stored of what they list (that is Refresh's). It returns their labels.
func (s *Service) CheckReachable(ctx context.Context, every time.Duration, limit int) ([]string, error) {
	labels, err := s.store.Repo().Health.ClaimChecks(ctx, every, limit)
	if err != nil {
		return nil, err
	}
	for _, label := range labels {
		if err := s.check(ctx, label); err != nil && ctx.Err() == nil {
			s.log.DebugContext(ctx, "checking an MCP server failed", "server_id", label, "error", err)
		}
	}
	return labels, nil
}

// check is one background check of a reachable server.
func (s *Service) check(ctx context.Context, label string) error {
	srv, err := s.store.Repo().Servers.Get(ctx, label, false)
	if err != nil {
		return err
	}
	start := time.Now()
	_, discErr := s.discover.ListTools(ctx, srv.URL, srv.Headers)
	took := time.Since(start)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if discErr != nil {
		reason := discoveryCause(srv, errorMessage(discErr))
		_, _, err := s.store.Repo().Health.CountFailure(ctx, label, srv.URL,
			healthError(fmt.Sprintf("%d checks or calls in a row failed; the last: %s", s.failures(), reason)), s.now(), s.failures())
		return errors.Join(discErr, err)
	}
	slow := s.slowReason(took)
	if slow != "" {
		s.log.WarnContext(ctx, "MCP server slow to list its tools: it is left out of requests until it is fast again",
			"server_id", label, "took", took)
	}
	return s.store.Repo().Health.MarkListed(ctx, label, srv.URL, s.now(), took, slow)
}

// RecheckUnreachable runs discovery again for the enabled unreachable and
// slow servers not checked for every, at most limit of them, and returns
// their labels. Each server is claimed in the database before it is
// checked, so of several replicas only one re-checks it per interval.
func (s *Service) RecheckUnreachable(ctx context.Context, every time.Duration, limit int) ([]string, error) {
	labels, err := s.store.Repo().Health.ClaimRechecks(ctx, every, limit)
	if err != nil {
		return nil, err
	}
	for _, label := range labels {
		if _, err := s.refresh(auth.WithUser(ctx, auth.System), label); err != nil && ctx.Err() == nil {
			s.log.DebugContext(ctx, "MCP server still unreachable", "server_id", label, "error", err)
		} else if srv, rerr := s.store.Repo().Servers.Get(ctx, label, false); err == nil && rerr == nil && srv.Health.Status == HealthSlow {
			s.log.DebugContext(ctx, "MCP server still slow to list its tools", "server_id", label, "error", srv.Health.LastError)
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
		if s.health.CheckEvery > 0 {
			if _, err := s.CheckReachable(ctx, s.health.CheckEvery, RecheckBatch); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "checking reachable MCP servers failed", "error", err)
			}
		}
	}
}
