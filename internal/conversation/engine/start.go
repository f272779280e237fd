package engine

import (
	"context"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
)

// Request is what starts a turn: a message (Input), decisions (Decisions)
// or, with Retry, the turn that failed last sent again. Exactly one of them
// is set.
type Request struct {
	// ConversationID is the conversation the turn belongs to; with Input,
	// "" starts a new conversation.
	ConversationID string
	// Input is the person's message.
	Input *string
	// Decisions answer the approval requests of the conversation's last
	// response.
	Decisions []conversation.Decision
	// Retry sends the turn that failed last again.
	Retry bool
	// Observer hears the turn's events as it runs (metrics); nil: none.
	Observer conversation.Sink
	// Prepared, when set, is called once the turn is prepared (its opening
	// committed) and before it runs, with its conversation's id.
	Prepared func(conversationID string)
}

// Started is a turn that Start prepared and runs.
type Started struct {
	// Subscription reads the conversation's events from the turn's first
	// one on; the caller closes it.
	Subscription *eventlog.Subscription
	turn         *Turn
	done         chan struct{}
	ctx          context.Context // Begin's, for Run: the turn keeps its values, not its cancellation
	observer     conversation.Sink
}

// ConversationID is the turn's conversation.
func (st *Started) ConversationID() string { return st.turn.ConversationID() }

// TurnID is the turn's id: its terminal event ends the stream of it.
func (st *Started) TurnID() string { return st.turn.ID() }

// Done is closed once the turn has run and recorded how it ended.
func (st *Started) Done() <-chan struct{} { return st.done }

// Start prepares the turn req asks for (in one transaction: a refusal is
// returned here, before anything streams), subscribes to its events and
// runs it on a goroutine of its own. The turn runs on whether or not the
// caller reads the subscription; it is not cancelled with ctx.
func (s *Service) Start(ctx context.Context, req Request) (*Started, error) {
	st, err := s.Begin(ctx, req)
	if err != nil {
		return nil, err
	}
	go st.Run()
	return st, nil
}

// Begin is Start without running the turn: the caller runs it (Run), on
// the goroutine that would otherwise wait for it (the request that streams
// it: a goroutine and its stack fewer per open stream).
func (s *Service) Begin(ctx context.Context, req Request) (*Started, error) {
	turn, err := s.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if req.Prepared != nil {
		req.Prepared(turn.ConversationID())
	}
	return &Started{Subscription: s.Follow(turn), turn: turn, done: make(chan struct{}), ctx: ctx, observer: req.Observer}, nil
}

// Run runs the turn Begin prepared, once, and returns when it has run and
// recorded how it ended. It is not cancelled with Begin's ctx.
func (st *Started) Run() {
	defer close(st.done)
	st.turn.Run(st.ctx, st.observer)
}

// prepare prepares the turn req asks for, without running it.
func (s *Service) prepare(ctx context.Context, req Request) (*Turn, error) {
	switch {
	case req.Retry:
		return s.StartRetry(ctx, req.ConversationID)
	case req.Input != nil:
		return s.StartMessage(ctx, req.ConversationID, *req.Input)
	default:
		return s.StartDecisions(ctx, req.ConversationID, req.Decisions)
	}
}
