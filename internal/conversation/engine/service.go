package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/book"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
	"github.com/toolgate/toolgate/internal/conversation/prelist"
	"github.com/toolgate/toolgate/internal/conversation/record"
	"github.com/toolgate/toolgate/internal/conversation/recovery"
	"github.com/toolgate/toolgate/internal/conversation/upstreamerr"
)

// Service runs conversations. Every method acts for the caller that ctx
// carries (auth.UserFrom): a conversation belongs to its creator, and
// nobody else, admins included, can see, change, stream or decide in it.
type Service struct {
	store    conversation.Store
	policies conversation.Policies
	upstream conversation.Upstream
	info     conversation.Info
	limits   conversation.Limits
	log      *slog.Logger
	now      func() time.Time

	registry // the turns running here, and the turn ends still being stored

	// gateway: the provider reaches the MCP servers through Toolgate's MCP
	// face (Options.Gateway), so the face's records say which calls ran.
	gateway bool

	// approvalTTL is APPROVAL_TTL: how long a request waits (expiry.go).
	approvalTTL time.Duration
	// readBackWait bounds how long reading back a response whose end a
	// turn did not see waits for it to finish (reconcile.go).
	readBackWait time.Duration
	hub          *eventlog.Hub       // the event log and its streams (Options.Events)
	book         *book.Conversations // create, list, transcript, tools, grants, rule tries
	prelist      *prelist.Listings   // direct mode: list before each request (Options.Prelist)
	// observer hears what metrics count (Options.Observer).
	observer conversation.Observer
	// keeper writes the record of what ran (record.Keeper).
	keeper *record.Keeper
	// closer closes a turn whose replica died (Cancel).
	closer *recovery.Closer

	asker        *asker        // rules, hooks and card words for a new request
	decider      *decider      // a person's decisions and what they settle
	serverHealth *serverHealth // what turns learn of their MCP servers' health
}

// registry is what this process holds of its turns: the turns running in
// it, the turn ends keepEnding is still storing, and the replica id and
// lease its turns run under.
type registry struct {
	mu      sync.Mutex
	running map[string]*running // conversation id -> its turn in this process
	// ending holds the turns whose end keepEnding is still storing (turn
	// id -> closed when done); stopping is closed by Stop.
	ending   map[string]chan struct{}
	endRetry [2]time.Duration // keepEnding's first and longest delay
	stopping chan struct{}
	stopOnce sync.Once

	replica  string        // this process among the replicas (Options.Replica)
	leaseTTL time.Duration // TURN_LEASE_TTL
}

type running struct {
	owner  string // the user whose turn it is
	turn   string
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// ErrCancelled and ErrShutdown say why a turn's context was cancelled.
var (
	ErrCancelled = errors.New("the turn was cancelled")
	ErrShutdown  = upstreamerr.ErrShutdown
	// ErrAccountDisabled stops the turns of an account an admin disabled.
	ErrAccountDisabled = upstreamerr.ErrAccountDisabled
)

// Stop cancels every running turn and waits, until ctx ends, for them to
// record how they ended; turn ends still being retried (keepEnding) get one
// last attempt. Call it after the HTTP server stopped taking requests.
func (s *Service) Stop(ctx context.Context) {
	defer s.stopEnding(ctx)
	s.mu.Lock()
	runs := make([]*running, 0, len(s.running))
	for _, r := range s.running {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	for _, r := range runs {
		r.cancel(ErrShutdown)
	}
	for _, r := range runs {
		select {
		case <-r.done:
		case <-ctx.Done():
			return
		}
	}
}

// caller is the signed-in user ctx carries. Without one the request never
// went through authentication: that is a bug, never "anyone".
func caller(ctx context.Context) (auth.User, error) { return conversation.Caller(ctx) }

// Info describes the upstream.
func (s *Service) Info() conversation.Info { return s.info }

// awaitEnd waits, up to limit, until no turn runs in the conversation (or
// the one running has an expired lease, which no replica will end).
func (s *Service) awaitEnd(ctx context.Context, owner, id string, limit time.Duration) {
	if r := s.lookup(id); r != nil {
		select {
		case <-r.done:
		case <-ctx.Done():
		case <-time.After(limit):
		}
		return
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		c, err := s.store.Repo().Conversations.Get(ctx, owner, id, false)
		if err != nil || c.ActiveTurn == "" || c.LeaseExpired {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Cancel stops the turn running in a conversation, on whichever replica
// runs it. What arrived so far stays in the transcript; the stream ends
// with an error event "cancelled". A turn whose replica died is closed at
// once (interrupted).
func (s *Service) Cancel(ctx context.Context, id string) error {
	u, err := caller(ctx)
	if err != nil {
		return err
	}
	conv, err := s.store.Repo().Conversations.Get(ctx, u.ID, id, false)
	if err != nil {
		return err
	}
	if r := s.lookup(id); r != nil {
		r.cancel(ErrCancelled)
		return nil
	}
	if conv.ActiveTurn == "" {
		return apperr.New(apperr.Conflict, "no_turn_running", "no turn is running in conversation %q, so there is nothing to cancel", id)
	}
	if conv.LeaseExpired {
		_, err := s.closer.Close(ctx, conversation.RunningTurn{ConversationID: conv.ID, OwnerID: u.ID, Turn: conv.ActiveTurn, LeaseOwner: conv.LeaseOwner})
		return err
	}
	return s.signal(ctx, conversation.Signal{Op: conversation.SignalCancel, ConversationID: id, Turn: conv.ActiveTurn})
}

// StopUser cancels every turn of userID, on every replica, as when the
// account is disabled: an account that may no longer sign in must not keep
// a model running tools on its behalf. It reports how many it stopped here.
func (s *Service) StopUser(userID string) int {
	n := s.stopUserHere(userID)
	raw, _ := json.Marshal(conversation.Signal{Op: conversation.SignalStopUser, UserID: userID})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.store.Repo().Events.Notify(ctx, conversation.ChannelSignals, string(raw)); err != nil {
		s.log.Warn("signalling the replicas to stop a disabled account's turns failed", "user_id", userID, "error", err)
	}
	return n
}

func (s *registry) stopUserHere(userID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.running {
		if r.owner == userID {
			r.cancel(ErrAccountDisabled)
			n++
		}
	}
	return n
}

func (s *registry) lookup(id string) *running {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[id]
}

func (s *registry) register(id, owner, turn string, cancel context.CancelCauseFunc) *running {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &running{owner: owner, turn: turn, cancel: cancel, done: make(chan struct{})}
	s.running[id] = r
	return r
}

func (s *registry) unregister(id string, r *running) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[id] == r {
		delete(s.running, id)
	}
	close(r.done)
}

// present fills the parts of an approval shown to people: the arguments,
// whose secrets were redacted before they were stored, and the paths of
// those secrets (Redact finds them again under their keys).
func present(a conversation.Approval) conversation.Approval { return conversation.Present(a) }

func newID(prefix string) string { return conversation.NewID(prefix) }

// titleFrom makes a conversation title from its first message.
func titleFrom(input string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(input), "\n")
	if utf8.RuneCountInString(line) > 60 {
		r := []rune(line)
		line = strings.TrimSpace(string(r[:60])) + "…"
	}
	return line
}
