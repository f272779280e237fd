package registry

import (
	"context"
	"errors"
	"fmt"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/policy"
	"strings"
	"time"
	"unicode/utf8"
)

// slowReason says why a listing that took took makes the server slow, or
// "" when it does not.
func slowReason(health policy.HealthOptions, took time.Duration) string {
	limit := health.ListTimeLimit
	if limit <= 0 || took <= limit {
		return ""
	}
	return fmt.Sprintf("listing its tools took %s, more than the limit of %s (MCP_LIST_TIME_LIMIT)", took.Round(100*time.Millisecond), limit)
}

// healthError is a failure's reason as stored: one line, bounded.
func healthError(reason string) string {
	reason = strings.Join(strings.Fields(reason), " ")
	if utf8.RuneCountInString(reason) > policy.MaxHealthErrorLen {
		r := []rune(reason)
		reason = string(r[:policy.MaxHealthErrorLen-1]) + "…"
	}
	if reason == "" {
		reason = "unknown error"
	}
	return reason
}

// discoveryCause is a discovery error without the "could not list tools at
// URL: " prefix the discoverer puts before the cause: the server's health
// is shown beside its URL.
func discoveryCause(srv policy.Server, msg string) string {
	return strings.TrimPrefix(msg, "could not list tools at "+policy.MaskURL(srv.URL)+": ")
}

// ServerFailed records that a turn found the server unreachable: the model's
// provider could not list its tools or reach it for a call. serverURL is the
// server's URL as the request sent it; a server pointed elsewhere since
// keeps its health. A server deleted meanwhile is not an error.
func (s *Health) ServerFailed(ctx context.Context, label, serverURL, reason string) error {
	reason = policy.MaskURLIn(reason, serverURL)
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
func (s *Health) CallFailed(ctx context.Context, label, serverURL, reason string) error {
	reason = policy.MaskURLIn(reason, serverURL)
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
func (s *Health) CallWorked(ctx context.Context, label, serverURL string) error {
	return s.store.Repo().Health.ResetFailures(ctx, label, serverURL)
}

func (s *Health) failures() int {
	if s.health.Failures < 1 {
		return policy.DefaultHealthFailures
	}
	return s.health.Failures
}

// CheckReachable lists the tools of the enabled reachable servers not
// checked for every, at most limit of them, to measure how long the
// listing takes: a server slower than the limit becomes slow (left out
// until it is fast again), one that fails counts a failure. Nothing is
// stored of what they list (that is Refresh's). It returns their labels.
func (s *Health) CheckReachable(ctx context.Context, every time.Duration, limit int) ([]string, error) {
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
func (s *Health) check(ctx context.Context, label string) error {
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
		reason := discoveryCause(srv, policy.ErrorMessage(discErr))
		_, _, err := s.store.Repo().Health.CountFailure(ctx, label, srv.URL,
			healthError(fmt.Sprintf("%d checks or calls in a row failed; the last: %s", s.failures(), reason)), s.now(), s.failures())
		return errors.Join(discErr, err)
	}
	slow := slowReason(s.health, took)
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
func (s *Health) RecheckUnreachable(ctx context.Context, every time.Duration, limit int) ([]string, error) {
	labels, err := s.store.Repo().Health.ClaimRechecks(ctx, every, limit)
	if err != nil {
		return nil, err
	}
	for _, label := range labels {
		if _, err := s.servers.refresh(auth.WithUser(ctx, auth.System), label); err != nil && ctx.Err() == nil {
			s.log.DebugContext(ctx, "MCP server still unreachable", "server_id", label, "error", err)
		} else if srv, rerr := s.store.Repo().Servers.Get(ctx, label, false); err == nil && rerr == nil && srv.Health.Status == policy.HealthSlow {
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
func (s *Health) RunRechecks(ctx context.Context, every time.Duration) {
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
