package conversation

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
	"github.com/toolgate/toolgate/internal/policy"
)

// Policies is all that turns need of the policy side: the tools a request
// offers, the tools a response listed, what a tool declared, and for a
// decision the tool's effective policy, the personal policy it remembers
// and its audit entry. postgres.ConversationPolicies implements it over
// policy.Service.
//
// The methods that take tx act in that transaction of the conversation
// store (the Repo that Store.Tx passes to its function), so a decision, the
// policy it remembers and its audit entry commit together or not at all.
type Policies interface {
	// RequestTools groups the tools of every enabled server for one
	// request of userID; grants are the conversation's allowances, by
	// server label. Servers that are unreachable are left out and returned
	// as skipped, unless keep names them (the request answers for them).
	RequestTools(ctx context.Context, userID string, grants map[string]map[string]policy.GrantRef, keep map[string]bool) ([]policy.ServerTools, []policy.SkippedServer, error)
	// RequestToolsAt is RequestTools from rd: policy_version and the
	// user's personal policies as the turn's opening statement read them
	// (Repo.OpenTurn), so the request leaves without another read.
	RequestToolsAt(ctx context.Context, rd policy.Read, grants map[string]map[string]policy.GrantRef, keep map[string]bool) ([]policy.ServerTools, []policy.SkippedServer, error)
	// ToolChoices groups the tools of every server, enabled or not, for
	// userID without a conversation's allowances: what a conversation's
	// servers and tools are chosen from.
	ToolChoices(ctx context.Context, userID string) ([]policy.ServerTools, error)
	// ServerFailed records that the turn found a server unreachable (the
	// provider could not list its tools or reach it for a call); url is the
	// server's URL as the request offered it.
	ServerFailed(ctx context.Context, label, url, reason string) error
	// CallFailed records that the provider could not deliver a call to the
	// server; the server becomes unreachable only after several in a row.
	CallFailed(ctx context.Context, label, url, reason string) error
	// CallWorked records that a call reached the server (the failures in a
	// row start again).
	CallWorked(ctx context.Context, label, url string) error
	// RecordDefinitions stores the definitions a server lists now (at the
	// MCP face) and returns the names of the tools whose stored definition
	// changed: from the next request on they ask.
	RecordDefinitions(ctx context.Context, label string, tools []policy.DiscoveredTool) ([]string, error)
	// RecordListed stores the tools a response listed for a server that
	// Toolgate had not discovered yet.
	RecordListed(ctx context.Context, label string, tools []policy.DiscoveredTool) error
	// DiscoveredTool returns a tool as discovery stored it; false when
	// Toolgate has not discovered it.
	DiscoveredTool(ctx context.Context, label, tool string) (policy.DiscoveredTool, bool, error)

	// DecideByHooks asks the decision hooks (the server's, then the
	// workspace's) about an approval request made for u, before its card
	// shows; the answer is already clamped (a hook never loosens a blocked
	// tool or a locked always). A hook that fails asks; an error means the
	// hooks' settings could not be read.
	DecideByHooks(ctx context.Context, u auth.User, c policy.HookCall) (policy.HookDecision, error)
	// ApprovalCard reads a tool's approval card (words and choices) in
	// tx: every choice and no words when an admin set none.
	ApprovalCard(ctx context.Context, tx Repo, label, tool string) (policy.ApprovalCard, error)

	// Effective returns the tool's effective policy for userID, read in tx
	// (the workspace's part may come from this replica's copy at the
	// version tx reads, or later). A server that no longer exists, or is
	// disabled, blocks its tools.
	Effective(ctx context.Context, tx Repo, userID, label, tool string) (policy.Policy, error)
	// EffectiveAt is Effective from rd, the policy read made in tx
	// (Repo.LockDecisions) before it changed any personal policy.
	EffectiveAt(ctx context.Context, rd policy.Read, label, tool string) (policy.Policy, error)
	// Resolve and ResolveAt are Effective and EffectiveAt with the whole
	// resolution: its source and an admin's lock at Ask among it.
	Resolve(ctx context.Context, tx Repo, userID, label, tool string) (policy.Resolution, error)
	ResolveAt(ctx context.Context, rd policy.Read, label, tool string) (policy.Resolution, error)
	// Remember sets u's personal policy for the tool in tx (audited there
	// as a policy change); it never changes the workspace's policy.
	Remember(ctx context.Context, tx Repo, u auth.User, label, tool string, p policy.Policy) error
	// Audit records e in the audit log in tx.
	Audit(ctx context.Context, tx Repo, e policy.AuditEntry) error
	// WidenDefault sets a workspace default to never for an admin's wider
	// decision in tx (label's server default, or with label "" the global
	// default), stored and audited as the settings page's change is;
	// refused for a member, a locked or a blocked default.
	WidenDefault(ctx context.Context, tx Repo, u auth.User, label string) (policy.Widened, error)
	// ResolveIn is Resolve read wholly in tx, the workspace's part
	// included: it sees a change tx made and has not committed.
	ResolveIn(ctx context.Context, tx Repo, userID, label, tool string) (policy.Resolution, error)
	// DecideByRules evaluates the argument rules (the tool's, its
	// server's, the workspace's) over one call made for u, read in tx.
	DecideByRules(ctx context.Context, tx Repo, u auth.User, label, tool string, args map[string]any) (policy.RuleDecision, error)
}

// Info describes the upstream for the browser.
type Info struct {
	Offline bool   `json:"offline"` // talking to the built-in emulator, not a real model
	Model   string `json:"model"`
	Layout  string `json:"tool_layout"`
	BaseURL string `json:"base_url"`
}

// Limits on input.
const (
	MaxInputLen  = 32000
	MaxTitleLen  = 200
	MaxReasonLen = 2000
)

// Limits are the per-user limits on starting turns. Zero means no limit.
type Limits struct {
	// MaxConcurrentTurns is how many of a user's conversations may run a
	// turn at once (USER_MAX_CONCURRENT_TURNS).
	MaxConcurrentTurns int
	// MessagesPerMinute is how many messages a user may send in any 60
	// seconds (USER_MESSAGES_PER_MINUTE).
	MessagesPerMinute int
}

// Service runs conversations. Every method acts for the caller that ctx
// carries (auth.UserFrom): a conversation belongs to its creator, and
// nobody else, admins included, can see, change, stream or decide in it.
type Service struct {
	store    Store
	policies Policies
	upstream Upstream
	info     Info
	limits   Limits
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
	prelist      *prelister  // direct mode: list before each request (Options.Prelist)
	writer       deltaWriter // stores the running turns' text deltas together
	eventStore   Store       // where writer stores them (Options.EventStore; store by default)
	// observer hears what metrics count (Options.Observer).
	observer Observer
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
func (s *Service) Info() Info { return s.info }

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
func (s *Service) Create(ctx context.Context, title string) (Conversation, error) {
	u, err := caller(ctx)
	if err != nil {
		return Conversation{}, err
	}
	if err := validTitle(title); err != nil {
		return Conversation{}, err
	}
	return s.store.Repo().CreateConversation(ctx, u.ID, newID("conv_"), strings.TrimSpace(stripNUL(title)))
}

// List returns the caller's conversations, most recently active first.
func (s *Service) List(ctx context.Context, limit int) ([]Conversation, error) {
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
func (s *Service) pendingExpiry(c Conversation) *time.Time {
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
func (s *Service) Rename(ctx context.Context, id, title string) (Conversation, error) {
	u, err := caller(ctx)
	if err != nil {
		return Conversation{}, err
	}
	if err := validTitle(title); err != nil {
		return Conversation{}, err
	}
	return s.store.Repo().RenameConversation(ctx, u.ID, id, strings.TrimSpace(stripNUL(title)))
}

// Get returns the transcript: every item in order, approval requests with
// their current state, and the pending ones.
func (s *Service) Get(ctx context.Context, id string) (Transcript, error) {
	var t Transcript
	u, err := caller(ctx)
	if err != nil {
		return t, err
	}
	err = s.store.Tx(ctx, func(r Repo) error {
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
		byID := map[string]*Approval{}
		t.Pending = []Approval{}
		for i := range aps {
			aps[i] = s.withExpiry(present(aps[i]))
			if c, ok := ranOn[aps[i].ID]; ok {
				aps[i].Call = &c
			}
			byID[aps[i].ID] = &aps[i]
			if aps[i].State == Pending {
				t.Pending = append(t.Pending, aps[i])
			}
		}
		attach(t.Items, byID, byCall)
		if t.Items == nil {
			t.Items = []Item{}
		}
		return nil
	})
	return t, err
}

// indexCalls indexes the face's records of a conversation's calls, shown
// (secrets hidden): by the approval request each ran on, and by id.
func indexCalls(calls []GatewayCall) (ranOn, byCall map[string]GatewayCall) {
	ranOn, byCall = map[string]GatewayCall{}, map[string]GatewayCall{}
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
func attach(items []Item, byID map[string]*Approval, byCall map[string]GatewayCall) {
	for i := range items {
		if items[i].Type == ItemApprovalRequest {
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
		if err := s.signal(ctx, Signal{Op: SignalCancel, ConversationID: id, Turn: conv.ActiveTurn}); err != nil {
			s.log.WarnContext(ctx, "signalling the replicas to cancel a turn failed", "conversation_id", id, "error", err)
		}
		s.awaitEnd(ctx, u.ID, id, 10*time.Second)
	}
	if err := s.store.Repo().DeleteConversation(ctx, u.ID, id); err != nil {
		return err
	}
	if err := s.signal(ctx, Signal{Op: SignalDeleted, ConversationID: id}); err != nil {
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
		_, err := s.takeOver(ctx, RunningTurn{ConversationID: conv.ID, OwnerID: u.ID, Turn: conv.ActiveTurn, LeaseOwner: conv.LeaseOwner})
		return err
	}
	return s.signal(ctx, Signal{Op: SignalCancel, ConversationID: id, Turn: conv.ActiveTurn})
}

// StopUser cancels every turn of userID, on every replica, as when the
// account is disabled: an account that may no longer sign in must not keep
// a model running tools on its behalf. It reports how many it stopped here.
func (s *Service) StopUser(userID string) int {
	n := s.stopUserHere(userID)
	raw, _ := json.Marshal(Signal{Op: SignalStopUser, UserID: userID})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.store.Repo().Notify(ctx, ChannelSignals, string(raw)); err != nil {
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
func present(a Approval) Approval {
	a.Arguments, a.Redacted = Redact(a.StoredArguments)
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
	if utf8.RuneCountInString(t) > MaxTitleLen {
		return apperr.Invalidf("invalid_title", "title", "title must be at most %d characters", MaxTitleLen)
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
