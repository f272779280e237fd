package conversation

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
// EndTurn only clears the running turn if it is still turn, so a late
// write never ends a newer one.
func (s *Service) keepEnding(ctx context.Context, conversationID, turn string, terminal NewEvent, cause error) {
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
			err := s.endWith(actx, conversationID, turn, terminal)
			cancel()
			if err == nil {
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
func (s *Service) stopEnding(ctx context.Context) {
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

// endWith ends turn if it still runs, with its terminal event, in one
// transaction.
func (s *Service) endWith(ctx context.Context, conversationID, turn string, terminal NewEvent) error {
	err := s.store.Tx(ctx, func(repo Repo) error {
		if err := repo.EndTurn(ctx, conversationID, turn, ""); err != nil {
			return err
		}
		_, err := repo.AppendEvents(ctx, conversationID, turn, []NewEvent{terminal})
		return err
	})
	if err == nil {
		s.hub.poke(conversationID, false)
	}
	return err
}
