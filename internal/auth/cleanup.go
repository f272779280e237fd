package auth

import (
	"context"
)

// Cleanup deletes what can no longer sign anyone in: sessions past their
// absolute or idle expiry, used or expired one-time tokens, and failed
// sign-ins older than the rate limit's window.
func (s *SignIn) Cleanup(ctx context.Context) (Cleaned, error) {
	now := s.now()
	s.lastClean.Store(now.UnixNano())
	return s.cleaner.DeleteExpired(ctx, now, now.Add(-s.opts.IdleTimeout), now.Add(-s.opts.FailureWindow))
}

// maybeCleanup runs Cleanup when the last one is CleanEvery old: sign-ins
// are what create these rows, so cleaning as they happen keeps the tables
// small without a ticker of its own. A failure is logged, never the
// sign-in's.
func (s *SignIn) maybeCleanup(ctx context.Context) {
	now := s.now().UnixNano()
	last := s.lastClean.Load()
	if now-last < int64(s.opts.CleanEvery) || !s.lastClean.CompareAndSwap(last, now) {
		return
	}
	if c, err := s.Cleanup(ctx); err != nil {
		s.log.Warn("delete expired sessions, links and failed sign-ins", "err", err)
	} else if c != (Cleaned{}) {
		s.log.Debug("deleted expired sign-in rows", "sessions", c.Sessions, "one_time_tokens", c.OneTime, "login_failures", c.LoginFailures)
	}
}
