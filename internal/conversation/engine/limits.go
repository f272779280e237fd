package engine

import (
	"context"
	"math"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
)

// messageWindow is the window USER_MESSAGES_PER_MINUTE counts in.
const messageWindow = time.Minute

// turnRetryAfter is what a refused turn suggests waiting: how long a turn
// lasts cannot be known, and most end within seconds.
const turnRetryAfter = 5

// checkLimits refuses to start a turn for u when u is at a per-user limit:
// too many conversations running a turn, or (for a new message) too many
// messages in the last minute. It runs in the transaction that starts the
// turn, after UserLoad's lock, so two requests at once are counted one after
// the other and cannot both pass; a refusal rolls back everything.
func (s *Service) checkLimits(ctx context.Context, r conversation.Repo, u auth.User, message bool) error {
	if !s.decider.limited(message) {
		return nil
	}
	load, err := r.Turns.UserLoad(ctx, u.ID, messageWindow)
	if err != nil {
		return err
	}
	return s.decider.judgeLoad(load, message)
}

// limited reports whether a limit applies to starting a turn (for a new
// message when message): then the user's load must be counted.
func (dc *decider) limited(message bool) bool {
	lim := dc.limits
	return lim.MaxConcurrentTurns > 0 || (message && lim.MessagesPerMinute > 0)
}

// judgeLoad refuses a turn start when load is at a limit.
func (dc *decider) judgeLoad(load conversation.UserLoad, message bool) error {
	lim := dc.limits
	if lim.MaxConcurrentTurns > 0 && load.Running >= lim.MaxConcurrentTurns {
		e := apperr.New(apperr.TooMany, "too_many_turns",
			"%d of your conversations are running a turn, the most USER_MAX_CONCURRENT_TURNS allows (%d); wait for one to finish or cancel it, then try again",
			load.Running, lim.MaxConcurrentTurns)
		e.RetryAfter = turnRetryAfter
		return e
	}
	if message && lim.MessagesPerMinute > 0 && load.Messages >= lim.MessagesPerMinute {
		wait := 1
		if load.OldestMessage != nil {
			// When the oldest message in the window leaves it.
			wait = max(1, int(math.Ceil(load.OldestMessage.Add(messageWindow).Sub(load.Now).Seconds())))
		}
		e := apperr.New(apperr.TooMany, "too_many_messages",
			"you sent %d messages in the last minute, the most USER_MESSAGES_PER_MINUTE allows (%d); try again in %d seconds",
			load.Messages, lim.MessagesPerMinute, wait)
		e.RetryAfter = wait
		return e
	}
	return nil
}
