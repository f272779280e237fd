package engine

import (
	"context"
	"time"
)

// How often keepEnding tries to store a turn's end: from endRetryMin,
// doubling up to endRetryMax, each attempt bounded by endAttemptTimeout.
const (
	endRetryMin       = 100 * time.Millisecond
	endRetryMax       = 5 * time.Second
	endAttemptTimeout = 5 * time.Second
)

// keepEnding stores the end of turn in the background after storing it
// with the turn failed (the database went away mid-turn). Until it is
// stored the conversation reads as streaming and refuses every message and
// retry, although nothing runs; so it is tried again, with a growing delay,
// until it succeeds or the service stops (Stop makes one last attempt).
// storeEnd stores the whole end (relay.storeEnd: what the turn received and
// could not store, what the provider's response read back holds, the error
// item and the events) and writes nothing when the turn no longer runs in
// the conversation, so a late write never ends a newer one. Meanwhile this
// replica renews the turn's lease and its own sweep leaves it alone: the
// end this replica holds in memory is the whole one.
func (s *Service) keepEnding(ctx context.Context, conversationID, turn string, storeEnd func(context.Context) error, cause error) {
	ctx = context.WithoutCancel(ctx)
	s.log.WarnContext(ctx, "recording the end of a turn failed; the conversation reads as streaming until it is stored, retrying in the background",
		"conversation_id", conversationID, "turn_id", turn, "error", cause)
	done := make(chan struct{})
	s.mu.Lock()
	s.ending[turn] = done
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.ending, turn)
			s.mu.Unlock()
			close(done)
		}()
		start, delay := s.now(), s.endRetry[0]
		for attempt := 1; ; attempt++ {
			last := false
			timer := time.NewTimer(delay)
			select {
			case <-timer.C:
			case <-s.stopping:
				timer.Stop()
				last = true
			}
			actx, cancel := context.WithTimeout(ctx, endAttemptTimeout)
			err := storeEnd(actx)
			cancel()
			if err == nil {
				s.hub.Poke(conversationID, false)
				s.log.InfoContext(ctx, "recorded the end of a turn after retrying; the conversation takes messages again",
					"conversation_id", conversationID, "turn_id", turn, "attempts", attempt, "after", s.now().Sub(start).Round(time.Millisecond))
				return
			}
			if last {
				s.log.ErrorContext(ctx, "the end of a turn could still not be recorded when the service stopped; the next start clears it",
					"conversation_id", conversationID, "turn_id", turn, "attempts", attempt, "error", err)
				return
			}
			delay = min(2*delay, s.endRetry[1])
		}
	}()
}

// stopEnding makes the turn ends still being retried try one last time, and
// waits, until ctx ends, for them to finish.
func (s *registry) stopEnding(ctx context.Context) {
	s.stopOnce.Do(func() { close(s.stopping) })
	s.mu.Lock()
	pending := make([]chan struct{}, 0, len(s.ending))
	for _, done := range s.ending {
		pending = append(pending, done)
	}
	s.mu.Unlock()
	for _, done := range pending {
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
	}
}

// endingTurns are the turns whose end keepEnding is still storing.
func (s *registry) endingTurns() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.ending))
	for turn := range s.ending {
		out = append(out, turn)
	}
	return out
}

// isEnding reports whether keepEnding is still storing turn's end here.
func (s *registry) isEnding(turn string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ending[turn]
	return ok
}
