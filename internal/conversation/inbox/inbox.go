// Package inbox is what waits for a person: the pending approval requests
// of every one of their chats and agents (MCP clients at Toolgate's face),
// and the decision on one of them by its id alone, wherever it came from.
// A chat's request is decided exactly as the chat decides it (the engine
// records it and runs the follow-up here, in the background); an agent's
// held call through conversation.HeldDecider.
package inbox

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
)

// Source says where a request came from: a chat, or an agent's MCP
// session (with the clientInfo its client gave).
type Source struct {
	Kind           string                   `json:"kind"` // chat, agent
	ConversationID string                   `json:"conversation_id"`
	Title          string                   `json:"title"`
	Client         *conversation.ClientInfo `json:"client,omitempty"`
}

// Waiting is one approval request as the inbox shows it: the card the chat
// shows (conversation.Approval, presented, with its expiry) and its source.
type Waiting struct {
	conversation.Approval
	Source Source `json:"source"`
}

// Store reads the inbox (internal/postgres implements it). Every method is
// scoped to owner in SQL: another person's requests are never read.
type Store interface {
	// Pending returns owner's pending approval requests across all their
	// conversations, oldest first, as stored, with the database's clock.
	Pending(ctx context.Context, owner string) ([]Waiting, time.Time, error)
	// Find returns owner's approval request id, whatever its state;
	// apperr NotFound when owner has none with that id.
	Find(ctx context.Context, owner, id string) (Waiting, error)
	// Owners returns the owner of each of the conversations ids that
	// exist.
	Owners(ctx context.Context, ids []string) (map[string]string, error)
}

// Presenter turns a stored request into what people see: arguments and
// correction as shown, its choices, and when it expires
// (book.Conversations.Shown).
type Presenter interface {
	Shown(a conversation.Approval) conversation.Approval
}

// Turns starts a chat's decision turn (engine.Service.Start).
type Turns interface {
	Start(ctx context.Context, req engine.Request) (*engine.Started, error)
}

// Service is the inbox of the person ctx carries.
type Service struct {
	store Store
	shown Presenter
	turns Turns
	held  conversation.HeldDecider
	// observer hears the background follow-up turns' events (metrics);
	// nil: none.
	observer conversation.Sink
}

// Options are the inbox's optional parts.
type Options struct {
	// Held decides an agent's held calls; nil: deciding one answers 503
	// held_calls_unavailable.
	Held conversation.HeldDecider
	// Observer hears the follow-up turns the inbox starts (metrics).
	Observer conversation.Sink
}

// New returns the inbox over store, presenting with shown and starting
// chats' decision turns with turns.
func New(store Store, shown Presenter, turns Turns, opts Options) *Service {
	return &Service{store: store, shown: shown, turns: turns, held: opts.Held, observer: opts.Observer}
}

// StatePending is the one state the inbox lists.
const StatePending = "pending"

// ValidState checks the list's state filter: "" or pending.
func ValidState(state string) error {
	if state == "" || state == StatePending {
		return nil
	}
	return apperr.Invalidf("invalid_state", "state",
		"state must be \"pending\" (the requests waiting for you); got %q", state)
}

// Pending lists the caller's requests waiting for a decision, oldest
// first. A request whose time is up (its expiry has passed, whether or not
// the sweep has run yet) waits for nothing and is left out.
func (s *Service) Pending(ctx context.Context) ([]Waiting, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return nil, err
	}
	ws, now, err := s.store.Pending(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	out := make([]Waiting, 0, len(ws))
	for _, w := range ws {
		w.Approval = s.shown.Shown(w.Approval)
		if w.ExpiresAt != nil && !now.Before(*w.ExpiresAt) {
			continue
		}
		out = append(out, w)
	}
	return out, nil
}

// Decide records the caller's decision d on their request id: a chat's as
// the chat records it, its follow-up (if the decision completes its
// response) running in the background; an agent's through the held
// decider. It returns the request as decided. Another person's request,
// or none, is not found; one that is not pending is a conflict carrying
// it, and nothing changes.
func (s *Service) Decide(ctx context.Context, id string, d conversation.Decision) (Waiting, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return Waiting{}, err
	}
	if d.ApprovalRequestID != "" && d.ApprovalRequestID != id {
		return Waiting{}, apperr.Invalidf("invalid_decision", "approval_request_id",
			"approval_request_id %q in the body names another request than the path's %q; leave it out", d.ApprovalRequestID, id)
	}
	d.ApprovalRequestID = id
	if d.Approve == nil {
		return Waiting{}, apperr.Invalidf("invalid_decision", "approve", "approve is required: true to run the tool, false to deny it")
	}
	w, err := s.store.Find(ctx, u.ID, id)
	if err != nil {
		return Waiting{}, err
	}
	if w.State != conversation.Pending {
		return Waiting{}, s.notPending(w)
	}
	switch w.Source.Kind {
	case conversation.KindAgent:
		if s.held == nil {
			return Waiting{}, apperr.New(apperr.Unavailable, "held_calls_unavailable",
				"this server cannot decide an agent's held calls (the MCP face for agents is off); decide it where the agent runs")
		}
		if _, err := s.held.DecideHeld(ctx, d); err != nil {
			return Waiting{}, err
		}
	default:
		st, err := s.turns.Start(ctx, engine.Request{ConversationID: w.Source.ConversationID,
			Decisions: []conversation.Decision{d}, Observer: s.observer})
		if err != nil {
			return Waiting{}, err
		}
		// Nobody reads this turn's stream here: the chat's open streams
		// see its events, and it runs on without this request.
		st.Subscription.Close()
	}
	return s.read(ctx, u.ID, id)
}

// DecideOne is Decide for d's own request, answering the request as
// decided (the signed links' Decider).
func (s *Service) DecideOne(ctx context.Context, d conversation.Decision) (conversation.Approval, error) {
	w, err := s.Decide(ctx, d.ApprovalRequestID, d)
	return w.Approval, err
}

// read returns the caller's request id as people see it.
func (s *Service) read(ctx context.Context, owner, id string) (Waiting, error) {
	w, err := s.store.Find(context.WithoutCancel(ctx), owner, id)
	if err != nil {
		return Waiting{}, err
	}
	w.Approval = s.shown.Shown(w.Approval)
	return w, nil
}

// notPending is the conflict of a decision on a request that waits for
// nothing: its state, and the request as it is now.
func (s *Service) notPending(w Waiting) error {
	w.Approval = s.shown.Shown(w.Approval)
	var e *apperr.Error
	switch w.State {
	case conversation.Superseded:
		e = apperr.New(apperr.Conflict, "approval_superseded", "approval request %q was %s by a newer message and can no longer be decided", w.ID, w.State)
	case conversation.Expired:
		e = apperr.New(apperr.Conflict, "approval_expired", "approval request %q was already %s", w.ID, w.State)
	case conversation.Withdrawn:
		e = apperr.New(apperr.Conflict, "approval_withdrawn", "approval request %q was %s: the agent that asked went away", w.ID, w.State)
	default:
		e = apperr.New(apperr.Conflict, "approval_already_decided", "approval request %q was already %s", w.ID, w.State)
	}
	e.Details = map[string]any{"approval": w}
	return e
}

// Snapshot is what the inbox stream tells of the caller's inbox: the ids
// of the requests waiting, oldest first, and when the first of them runs
// out of time (nil: none does), when the stream looks again.
type Snapshot struct {
	IDs        []string
	NextExpiry *time.Time
}

// Snap reads the caller's inbox for the stream.
func (s *Service) Snap(ctx context.Context) (Snapshot, error) {
	ws, err := s.Pending(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{IDs: make([]string, len(ws))}
	for i, w := range ws {
		snap.IDs[i] = w.ID
		if w.ExpiresAt != nil && (snap.NextExpiry == nil || w.ExpiresAt.Before(*snap.NextExpiry)) {
			snap.NextExpiry = w.ExpiresAt
		}
	}
	return snap, nil
}
