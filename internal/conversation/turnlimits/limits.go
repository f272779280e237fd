// Package turnlimits judges the per-user limits (USER_MAX_CONCURRENT_TURNS,
// USER_MESSAGES_PER_MINUTE) for the turn engine: which limits the opening
// of a turn checks (Turns.Open, against the user's counters, 00044), and
// the error a person sees when it refuses.
package turnlimits

import (
	"errors"
	"math"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
)

// MessageWindow is the window USER_MESSAGES_PER_MINUTE counts in (00044's
// counters: a fixed window of a minute from the first message after the
// previous one closed).
const MessageWindow = time.Minute

// turnRetryAfter is what a refused turn suggests waiting: how long a turn
// lasts cannot be known, and most end within seconds.
const turnRetryAfter = 5

// For are the limits of lim that the opening of a turn checks (for a new
// message when message), under the lock of the user's counters: two
// requests at once are counted one after the other and cannot both pass; a
// refusal (conversation.LimitReached) rolls back everything, and Error
// turns it into the error the person sees.
func For(lim conversation.Limits, message bool) conversation.Limits {
	if !message {
		lim.MessagesPerMinute = 0
	}
	return lim
}

// Error is err, or for the opening's refusal at a limit of lim (message:
// for a new message) the error the person sees.
func Error(lim conversation.Limits, err error, message bool) error {
	var lr *conversation.LimitReached
	if !errors.As(err, &lr) {
		return err
	}
	if e := Judge(lim, lr.Load, message); e != nil {
		return e
	}
	return err
}

// Judge refuses a turn start when load is at a limit of lim.
func Judge(lim conversation.Limits, load conversation.UserLoad, message bool) error {
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
			// When the window that counted them closes.
			wait = max(1, int(math.Ceil(load.OldestMessage.Add(MessageWindow).Sub(load.Now).Seconds())))
		}
		e := apperr.New(apperr.TooMany, "too_many_messages",
			"you sent %d messages in the last minute, the most USER_MESSAGES_PER_MINUTE allows (%d); try again in %d seconds",
			load.Messages, lim.MessagesPerMinute, wait)
		e.RetryAfter = wait
		return e
	}
	return nil
}
