package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	"github.com/toolgate/toolgate/internal/policy"
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

	mu      sync.Mutex
	running map[string]*running // conversation id -> its turn in this process
	// ending holds the turns whose end keepEnding is still storing (turn
	// id -> closed when done); stopping is closed by Stop.
	ending   map[string]chan struct{}
	endRetry [2]time.Duration // keepEnding's first and longest delay
	stopping chan struct{}
	stopOnce sync.Once

	// gateway: the provider reaches the MCP servers through Toolgate's MCP
	// face (Options.Gateway), so the face's records say which calls ran.
	gateway bool

	replica  string        // this process among the replicas (Options.Replica)
	leaseTTL time.Duration // TURN_LEASE_TTL
	// approvalTTL is APPROVAL_TTL: how long a request waits (expiry.go).
	approvalTTL time.Duration
	// readBackWait bounds how long reading back a response whose end a
	// turn did not see waits for it to finish (reconcile.go).
	readBackWait time.Duration
	hub          hub
	prelist      *prelister         // direct mode: list before each request (Options.Prelist)
	writer       deltaWriter        // stores the running turns' text deltas together
	eventStore   conversation.Store // where writer stores them (Options.EventStore; store by default)
	// observer hears what metrics count (Options.Observer).
	observer conversation.Observer

	asker        *asker        // rules, hooks and card words for a new request
	decider      *decider      // a person's decisions and what they settle
	serverHealth *serverHealth // what turns learn of their MCP servers' health
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
	ErrShutdown  = errors.New("the server is shutting down")
	// ErrAccountDisabled stops the turns of an account an admin disabled.
	ErrAccountDisabled = errors.New("the account was disabled")
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
func caller(ctx context.Context) (auth.User, error) {
	u, ok := auth.UserFrom(ctx)
	if !ok || u.ID == "" {
		return auth.User{}, apperr.New(apperr.Internal, "no_caller", "the request carries no signed-in user")
	}
	return u, nil
}

// Info describes the upstream.
func (s *Service) Info() conversation.Info { return s.info }

// Recover closes the turns whose replica died (their lease expired) and
// supersedes approval requests left by responses that never completed. It
// never touches a live replica's turns: a turn whose lease is still valid
// is left alone, and closed by a later sweep if its lease runs out.
func (s *Service) Recover(ctx context.Context) error {
	if n := s.Sweep(ctx); n > 0 {
		s.log.WarnContext(ctx, "closed turns left running by a replica that stopped", "count", n)
	}
	// Their responses never completed: what they asked cannot be answered.
	n, err := s.store.Repo().SupersedeOrphans(ctx, "The response that asked did not complete (the server stopped), so this request can no longer be answered.")
	if n > 0 {
		s.log.WarnContext(ctx, "superseded approval requests of responses that never completed", "count", n)
	}
	return err
}

// Create starts an empty conversation.
func (s *Service) Create(ctx context.Context, title string) (conversation.Conversation, error) {
	u, err := caller(ctx)
	if err != nil {
		return conversation.Conversation{}, err
	}
	if err := validTitle(title); err != nil {
		return conversation.Conversation{}, err
	}
	return s.store.Repo().CreateConversation(ctx, u.ID, newID("conv_"), strings.TrimSpace(stripNUL(title)))
}

// List returns the caller's conversations, most recently active first.
func (s *Service) List(ctx context.Context, limit int) ([]conversation.Conversation, error) {
	u, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	if limit > 500 {
		return nil, apperr.Invalidf("invalid_limit", "limit", "limit must be between 1 and 500 (got %d)", limit)
	}
	cs, err := s.store.Repo().ListConversations(ctx, u.ID, limit)
	for i := range cs {
		cs[i].PendingExpiresAt = s.pendingExpiry(cs[i])
	}
	return cs, err
}

// pendingExpiry is when the last of c's pending requests runs out of time
// (Conversation.PendingExpiresAt); nil when none is pending or one never
// expires.
func (s *Service) pendingExpiry(c conversation.Conversation) *time.Time {
	pt := c.PendingTimes
	if c.PendingCount == 0 || pt.Never || (pt.DefaultLast != nil && s.approvalTTL <= 0) {
		return nil
	}
	var last *time.Time
	if pt.DefaultLast != nil {
		at := pt.DefaultLast.Add(s.approvalTTL)
		last = &at
	}
	if pt.ServerLast != nil && (last == nil || pt.ServerLast.After(*last)) {
		at := *pt.ServerLast
		last = &at
	}
	return last
}

// Rename changes a conversation's title.
func (s *Service) Rename(ctx context.Context, id, title string) (conversation.Conversation, error) {
	u, err := caller(ctx)
	if err != nil {
		return conversation.Conversation{}, err
	}
	if err := validTitle(title); err != nil {
		return conversation.Conversation{}, err
	}
	return s.store.Repo().RenameConversation(ctx, u.ID, id, strings.TrimSpace(stripNUL(title)))
}

// Get returns the transcript: every item in order, approval requests with
// their current state, and the pending ones.
func (s *Service) Get(ctx context.Context, id string) (conversation.Transcript, error) {
	var t conversation.Transcript
	u, err := caller(ctx)
	if err != nil {
		return t, err
	}
	err = s.store.Tx(ctx, func(r conversation.Repo) error {
		var err error
		if t.Conversation, err = r.Conversation(ctx, u.ID, id, false); err != nil {
			return err
		}
		if t.Items, err = r.Items(ctx, u.ID, id); err != nil {
			return err
		}
		aps, err := r.Approvals(ctx, u.ID, id, nil, false)
		if err != nil {
			return err
		}
		calls, err := r.ConversationCalls(ctx, u.ID, id)
		if err != nil {
			return err
		}
		ranOn, byCall := indexCalls(calls)
		byID := map[string]*conversation.Approval{}
		t.Pending = []conversation.Approval{}
		for i := range aps {
			aps[i] = s.withExpiry(present(aps[i]))
			if c, ok := ranOn[aps[i].ID]; ok {
				aps[i].Call = &c
			}
			byID[aps[i].ID] = &aps[i]
			if aps[i].State == conversation.Pending {
				t.Pending = append(t.Pending, aps[i])
			}
		}
		attach(t.Items, byID, byCall)
		if t.Items == nil {
			t.Items = []conversation.Item{}
		}
		return nil
	})
	return t, err
}

// indexCalls indexes the face's records of a conversation's calls, shown
// (secrets hidden): by the approval request each ran on, and by id.
func indexCalls(calls []conversation.GatewayCall) (ranOn, byCall map[string]conversation.GatewayCall) {
	ranOn, byCall = map[string]conversation.GatewayCall{}, map[string]conversation.GatewayCall{}
	for _, c := range calls {
		shown := shownCall(c)
		byCall[c.ID] = shown
		if c.ApprovalRequestID != nil {
			ranOn[*c.ApprovalRequestID] = shown
		}
	}
	return ranOn, byCall
}

// attach gives the transcript's items what they show: an approval request
// its approval (byID), a call that passed the MCP face its record (byCall).
func attach(items []conversation.Item, byID map[string]*conversation.Approval, byCall map[string]conversation.GatewayCall) {
	for i := range items {
		if items[i].Type == conversation.ItemApprovalRequest {
			items[i].Approval = byID[items[i].ID]
		}
		// A call that passed the MCP face carries the face's record as
		// it is now (its state, result, refusal).
		if c, ok := byCall[items[i].GatewayCallID]; ok && items[i].GatewayCallID != "" {
			items[i].Call = &c
		}
	}
}

// Delete removes a conversation. A turn running in it, on any replica, is
// cancelled first (waiting a while for it to record how it ended), and the
// conversation's open event streams end with conversation.deleted.
func (s *Service) Delete(ctx context.Context, id string) error {
	u, err := caller(ctx)
	if err != nil {
		return err
	}
	// Only the owner's turn is cancelled: the lookup is scoped to the owner.
	conv, err := s.store.Repo().Conversation(ctx, u.ID, id, false)
	if err != nil {
		return err
	}
	if conv.ActiveTurn != "" {
		if err := s.signal(ctx, conversation.Signal{Op: conversation.SignalCancel, ConversationID: id, Turn: conv.ActiveTurn}); err != nil {
			s.log.WarnContext(ctx, "signalling the replicas to cancel a turn failed", "conversation_id", id, "error", err)
		}
		s.awaitEnd(ctx, u.ID, id, 10*time.Second)
	}
	if err := s.store.Repo().DeleteConversation(ctx, u.ID, id); err != nil {
		return err
	}
	if err := s.signal(ctx, conversation.Signal{Op: conversation.SignalDeleted, ConversationID: id}); err != nil {
		s.log.WarnContext(ctx, "signalling the replicas that a conversation was deleted failed", "conversation_id", id, "error", err)
	}
	return nil
}

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
		c, err := s.store.Repo().Conversation(ctx, owner, id, false)
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
	conv, err := s.store.Repo().Conversation(ctx, u.ID, id, false)
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
		_, err := s.takeOver(ctx, conversation.RunningTurn{ConversationID: conv.ID, OwnerID: u.ID, Turn: conv.ActiveTurn, LeaseOwner: conv.LeaseOwner})
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
	if err := s.store.Repo().Notify(ctx, conversation.ChannelSignals, string(raw)); err != nil {
		s.log.Warn("signalling the replicas to stop a disabled account's turns failed", "user_id", userID, "error", err)
	}
	return n
}

func (s *Service) stopUserHere(userID string) int {
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

func (s *Service) lookup(id string) *running {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[id]
}

func (s *Service) register(id, owner, turn string, cancel context.CancelCauseFunc) *running {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &running{owner: owner, turn: turn, cancel: cancel, done: make(chan struct{})}
	s.running[id] = r
	return r
}

func (s *Service) unregister(id string, r *running) {
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
func present(a conversation.Approval) conversation.Approval {
	a.Arguments, a.Redacted = conversation.Redact(a.StoredArguments)
	a.Correction = shownCorrection(a.StoredCorrection)
	if a.Redacted == nil {
		a.Redacted = []string{}
	}
	if len(a.Annotations) == 0 {
		a.Annotations = []byte("{}")
	}
	a.Reason.Policy = policy.Always
	if a.Choices == nil { // asked before cards had choices
		a.Choices = policy.AllChoices()
		if a.AskLock != nil {
			a.Choices = policy.LockedChoices(a.Choices)
		}
	}
	return a
}

func validTitle(t string) error {
	if utf8.RuneCountInString(t) > conversation.MaxTitleLen {
		return apperr.Invalidf("invalid_title", "title", "title must be at most %d characters", conversation.MaxTitleLen)
	}
	return nil
}

func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// titleFrom makes a conversation title from its first message.
func titleFrom(input string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(input), "\n")
	if utf8.RuneCountInString(line) > 60 {
		r := []rune(line)
		line = strings.TrimSpace(string(r[:60])) + "…"
	}
	return line
}
