package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
)

// stopOf is the decision of ds that stops, if any.
func stopOf(ds []conversation.Decision) *conversation.Decision {
	for i := range ds {
		if ds[i].Stop {
			return &ds[i]
		}
	}
	return nil
}

// validStop refuses a stop that is not a plain denial: stop denies, so it
// cannot approve, and a correction asks the model to try again at once,
// which a stop does not let it do.
func validStop(ds []conversation.Decision) error {
	for i, d := range ds {
		field := "stop"
		if len(ds) > 1 {
			field = fmt.Sprintf("decisions[%d].stop", i)
		}
		switch {
		case !d.Stop:
		case d.Approve != nil && *d.Approve:
			return apperr.Invalidf("invalid_stop", field,
				"stop: true denies this request and every other one waiting in its response, so it goes with approve: false; nothing was recorded")
		case len(d.Correction) > 0 && string(d.Correction) != "null":
			return apperr.Invalidf("invalid_stop", field,
				"stop: true gives the model no turn, so it cannot carry a correction (which asks the model to try again at once); deny with the correction without stop, or stop without it; nothing was recorded")
		}
	}
	return nil
}

// stopRest denies, by u with stop's reason, every request of responses
// still pending after the decisions of this call (decided): each gets its
// decision record and audit entry, marked stopped, in r's transaction.
func (dc *decider) stopRest(ctx context.Context, r conversation.Repo, u auth.User, conv string, responses map[string]bool,
	stop conversation.Decision, decided map[string]bool, now time.Time) ([]conversation.DecisionEvent, error) {
	var evs []conversation.DecisionEvent
	deny := false
	for resp := range responses {
		aps, err := r.Approvals.OfResponse(ctx, u.ID, conv, resp)
		if err != nil {
			return nil, err
		}
		for _, a := range aps {
			if a.State != conversation.Pending || decided[a.ID] {
				continue
			}
			ev, err := dc.decide(ctx, r, nil, a, conversation.Decision{ApprovalRequestID: a.ID, Approve: &deny, Reason: stop.Reason,
				Stop: true, CoveredBy: stop.ApprovalRequestID}, u, now)
			if err != nil {
				return nil, err
			}
			decided[a.ID] = true
			evs = append(evs, ev)
		}
	}
	return evs, nil
}

// endStopped ends the stopped turn in r's transaction, with nothing sent:
// the transcript ends with the stop, as a turn that ended without
// completing, and the conversation stays at its last response, whose
// requests (all decided now) go with the next message.
func (t *Turn) endStopped(ctx context.Context, r conversation.Repo, denied int) error {
	e := conversation.TurnError{Code: conversation.CodeStoppedByUser, Message: fmt.Sprintf(
		"you stopped the turn: %d tool call(s) denied, nothing was sent to the model; your denials go with your next message", denied)}
	resp := ""
	if t.conv.LastResponseID != nil {
		resp = *t.conv.LastResponseID
	}
	if _, err := r.Conversations.AppendItem(ctx, t.conv.ID, conversation.Item{Type: conversation.ItemError, ID: newID("err_"), ResponseID: resp, Error: &e}); err != nil {
		return err
	}
	t.stopped = &e
	return nil
}

// stoppedDenials counts the stop's denials among the turn's decisions.
func (t *Turn) stoppedDenials() int {
	return len(slices.DeleteFunc(slices.Clone(t.decisions), func(d conversation.DecisionEvent) bool { return !d.Stopped }))
}
