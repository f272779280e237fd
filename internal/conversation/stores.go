package conversation

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/policy"
)

// Store runs work against the conversation tables.
type Store interface {
	// Tx runs fn in one transaction: committed if fn returns nil. The
	// Policies methods that take a Repo act in the same transaction when
	// given fn's.
	Tx(ctx context.Context, fn func(Repo) error) error
	// Repo reads and writes outside a transaction, one statement at a time.
	Repo() Repo
}

// Repo is the persistence the conversation service needs, as stores named
// for what they hold; all of one Repo act on the same connection (or
// transaction). Methods return apperr errors: NotFound for a missing
// conversation.
//
// Methods that take an owner only see that user's conversations: another
// user's conversation, its items, approvals and allowances are reported
// (or listed) exactly as a missing one. The rest act on a conversation the
// caller has already found under its owner's scope (and holds locked).
type Repo struct {
	Conversations Conversations
	Turns         Turns
	Events        Events
	Approvals     Approvals
	Leases        Leases
	Grants        Grants
	Calls         Calls
}

// Conversations holds the conversations, their transcripts and owners.
type Conversations interface {
	// Create stores a new conversation of owner.
	Create(ctx context.Context, owner, id, title string) (Conversation, error)
	// OpenAgent stores, once, the conversation (kind agent) of an MCP
	// session of owner's client, and returns it; an id another owner holds
	// is NotFound.
	OpenAgent(ctx context.Context, owner, id, title string, client ClientInfo) (Conversation, error)
	// List returns up to limit of owner's conversations, most recently
	// updated first; every one when limit is not positive.
	List(ctx context.Context, owner string, limit int) ([]Conversation, error)
	// Get returns one conversation; lock holds it until the transaction
	// ends, which serialises every turn and decision on it.
	Get(ctx context.Context, owner, id string, lock bool) (Conversation, error)
	// Rename sets the title of owner's conversation and returns it.
	Rename(ctx context.Context, owner, id, title string) (Conversation, error)
	// Delete deletes owner's conversation.
	Delete(ctx context.Context, owner, id string) error
	// SetTools stores the conversation's choice of servers and tools and
	// returns the conversation.
	SetTools(ctx context.Context, owner, id string, sel policy.Selection) (Conversation, error)
	// User returns an account (a conversation's owner) by id.
	User(ctx context.Context, id string) (auth.User, error)
	// AppendItem adds it at the end of the transcript and returns it with
	// its sequence number and time.
	AppendItem(ctx context.Context, conversationID string, it Item) (Item, error)
	// Items returns the transcript of owner's conversation, in order.
	Items(ctx context.Context, owner, conversationID string) ([]Item, error)
}

// Turns holds what starts, opens and ends a conversation's turn.
type Turns interface {
	// StartMessage does in one round trip what a message's turn starts
	// with: Conversations.Get (locked; Conversations.Create when
	// m.ConversationID is empty), the
	// approval requests of the conversation's last response
	// (Approvals.OfResponse) and Conversations.AppendItem (m.Item), in
	// that order. The caller judges what they read and returns an error
	// (rolling back) to refuse. NotFound if the conversation is missing or
	// another's.
	StartMessage(ctx context.Context, m MessageStart) (MessageStarted, error)
	// LockDecisions does in one round trip what Conversations.Get
	// (locked), then Approvals.List (ids, locked), the policy read of
	// owner (policy version and personal policies, as
	// Policies.Decisions.Effective makes it) and the approval cards of
	// their tools (Policies.Decisions.Card) would.
	LockDecisions(ctx context.Context, owner, conversationID string, ids []string) (DecisionsLocked, error)
	// ClaimIdempotencyKey records, in the transaction that opens turn, that
	// the request holding user's Idempotency-Key (as holder) started it; a
	// conflict when holder no longer holds the key (the turn must not start).
	ClaimIdempotencyKey(ctx context.Context, userID, key, holder, conversationID, turn string) error
	// Start marks turn as the conversation's running turn, leased to the
	// replica owner for ttl.
	Start(ctx context.Context, id, turn, owner string, ttl time.Duration) error
	// Open does in one round trip what Start, Approvals.MarkSent
	// (o.SentIDs), Events.Append (o.Events), Grants.List (the live ones of
	// o.Owner that apply in the conversation at o.Now) and, when
	// o.Policies is set, the policy read of the turn's request
	// (policy_version and o.Owner's personal policies, stored in
	// *o.Policies) would: it returns the id of the last event stored and
	// the grants. NotFound if the conversation is missing.
	Open(ctx context.Context, o TurnOpening) (last int64, grants []Grant, err error)
	// Continue moves the conversation's last response on to response while
	// turn keeps running (its follow-up answers requests that rules
	// decided); false when turn no longer runs in the conversation.
	Continue(ctx context.Context, id, turn, response string) (bool, error)
	// StillRuns locks the conversation's row and fails the transaction
	// (Conflict, CodeTurnNotRunning) unless turn still runs in it (the
	// conversation gone included). In a transaction it goes with the next
	// statement or the COMMIT, whose batch it aborts: one round trip fewer
	// than reading the conversation first.
	StillRuns(ctx context.Context, id, turn string) error
	// End clears the running turn (and its lease) if it is still turn, and
	// when lastResponse is not empty makes it the conversation's last
	// response.
	End(ctx context.Context, id, turn, lastResponse string) error
}

// Events holds the conversations' stream events.
type Events interface {
	// Append stores stream events after the conversation's last one and
	// announces them to every replica; it returns the last id given.
	Append(ctx context.Context, conversationID, turn string, evs []NewEvent) (int64, error)
	// Put stores evs with the ids first, first+1, … given by the turn that
	// holds the conversation's lease, raises the conversation's counter to
	// the last, and announces them as Append does; it returns the last id
	// (0 when the conversation was deleted).
	Put(ctx context.Context, conversationID, turn string, first int64, evs []NewEvent) (int64, error)
	// PutMany is Put for many conversations' batches (each from its First)
	// in one statement, and returns each batch's last id (0 when its
	// conversation was deleted). Only for events no webhook can want (text
	// deltas): it queues no deliveries. Each conversation must appear in
	// one batch at most.
	PutMany(ctx context.Context, batches []ConvEvents) ([]int64, error)
	// After returns up to limit events after id after, in order.
	After(ctx context.Context, conversationID string, after int64, limit int) ([]StoredEvent, error)
	// OfTurn returns every event of one turn, in order.
	OfTurn(ctx context.Context, conversationID, turn string) ([]StoredEvent, error)
	// TurnStart is the id just before turn's first event (-1: none yet).
	TurnStart(ctx context.Context, conversationID, turn string) (int64, error)
	// Notify sends a notification to every replica.
	Notify(ctx context.Context, channel, payload string) error
}

// Approvals holds the approval requests and their answers.
type Approvals interface {
	// Insert stores a new approval request.
	Insert(ctx context.Context, a Approval) error
	// List returns the conversation's approval requests, oldest first;
	// with ids, only those; lock holds them until the transaction ends.
	List(ctx context.Context, owner, conversationID string, ids []string, lock bool) ([]Approval, error)
	// Last returns the conversation's latest approval request of server's
	// tool; false when there is none.
	Last(ctx context.Context, owner, conversationID, server, tool string) (Approval, bool, error)
	// OfResponse returns the approval requests one response made, oldest
	// first, locked.
	OfResponse(ctx context.Context, owner, conversationID, response string) ([]Approval, error)
	// OfTool returns a tool's most recent approval requests (at most
	// q.Limit), newest first, with their conversations' owners.
	OfTool(ctx context.Context, q ToolApprovalsQuery) ([]OwnedApproval, error)
	// Decide stores a's state and decision fields.
	Decide(ctx context.Context, owner string, a Approval) error
	// MarkAnswered records that response carried the answers to ids.
	MarkAnswered(ctx context.Context, ids []string, response string) error
	// MarkSent records that turn carries the answers to ids, before it
	// sends them.
	MarkSent(ctx context.Context, ids []string, turn string) error
	// UnmarkSent undoes MarkSent for turn's answers known not delivered.
	UnmarkSent(ctx context.Context, turn string) error
	// Sent returns (locked) the requests whose answers turn carried.
	Sent(ctx context.Context, conversationID, turn string) ([]Approval, error)
	// Owned returns owner's approval request id, whichever conversation
	// holds it, with that conversation's kind and whether a held call's
	// holder is gone; lock holds it until the transaction ends. Another
	// owner's, or none, is NotFound.
	Owned(ctx context.Context, owner, id string, lock bool) (Approval, HeldState, error)
	// Hold extends the lease of the replica holding id's call open (while
	// it is pending) to d from now.
	Hold(ctx context.Context, id string, d time.Duration) error
}

// HeldState is what Owned says beside the request.
type HeldState struct {
	Kind string // of its conversation: chat or agent
	// HolderGone: an agent's call that no replica holds open any longer
	// (its lease, held_until, ran out).
	HolderGone bool
}

// Leases holds what recovery reads and settles: the leases of running
// turns, and the requests left behind (orphaned or out of time).
type Leases interface {
	// Renew extends owner's leases on turns by ttl and returns the turns it
	// still holds.
	Renew(ctx context.Context, owner string, turns []string, ttl time.Duration) ([]string, error)
	// ExpiredTurns lists up to limit running turns whose lease ran out.
	ExpiredTurns(ctx context.Context, limit int) ([]RunningTurn, error)
	// LockExpiredTurn locks the conversation (in a transaction) if turn
	// still runs in it on an expired lease.
	LockExpiredTurn(ctx context.Context, conversationID, turn string) (bool, error)
	// SupersedeOrphans supersedes, with reason, the pending approval
	// requests of conversations with no running turn whose response is not
	// the conversation's last: they came from a response that never
	// completed and can no longer be answered.
	SupersedeOrphans(ctx context.Context, reason string) (int64, error)
	// WithdrawAbandoned withdraws, with reason, the pending requests of
	// agents' held calls whose holder's lease ran out: no one waits for
	// their decision.
	WithdrawAbandoned(ctx context.Context, reason string) (int64, error)
	// ExpiringConversations lists up to limit conversations with no
	// running turn holding a pending approval request older than its
	// server's approval_ttl_seconds or, where the server sets none, ttl
	// (zero or less: only servers that set one expire their requests).
	ExpiringConversations(ctx context.Context, ttl time.Duration, limit int) ([]string, error)
	// ExpireApprovals locks the conversation if no turn runs in it and
	// expires its pending requests that are too old as
	// ExpiringConversations judges, each at most once, with
	// reason(request) as the decision's reason (ServerTTLSeconds set as
	// read); it returns the conversation's owner and the requests expired.
	ExpireApprovals(ctx context.Context, conversationID string, ttl time.Duration, reason func(Approval) string) (string, []Approval, error)
}

// Grants holds the allowances people give ("allow for this conversation",
// "always").
type Grants interface {
	// List returns owner's grants as f says, newest first (live ones only
	// unless f.Ended); another owner's are never returned.
	List(ctx context.Context, owner string, f GrantFilter) ([]Grant, error)
	// Add stores g (for the owner of g's approval request).
	Add(ctx context.Context, owner string, g Grant) error
	// Revoke revokes owner's grant id at now; revoked is false when it had
	// already ended (revoked or expired). NotFound for a grant of another
	// owner or none.
	Revoke(ctx context.Context, owner, id string, now time.Time) (g Grant, revoked bool, err error)
}

// Calls holds the calls through the MCP face.
type Calls interface {
	// GateScope reads the conversation id (any owner's) and the server
	// label's state; NotFound when the conversation is gone.
	GateScope(ctx context.Context, conversationID, label string) (GateScope, error)
	// Begin, in a transaction, serialises the identical calls of k until
	// it ends, locks the conversation against its turn ending (FOR SHARE)
	// and returns its running turn ("" when none, or gone) and the
	// identical call already admitted (refusals aside), if any.
	Begin(ctx context.Context, k CallKey) (activeTurn string, prior *GatewayCall, err error)
	// UsableApproval returns (locked) the oldest approved request of k's
	// conversation whose answer k's turn carried, for k's tool and
	// arguments digest, that no call has used; nil when there is none.
	UsableApproval(ctx context.Context, k CallKey) (*Approval, error)
	// Insert stores c; false when an identical call (or one using the same
	// approval) was stored first.
	Insert(ctx context.Context, c GatewayCall) (bool, error)
	// Finish stores how a running call ended; false when it is not running
	// (unknown, or finished already).
	Finish(ctx context.Context, c GatewayCall) (GatewayCall, bool, error)
	// Get returns one call; NotFound when there is none.
	Get(ctx context.Context, id string) (GatewayCall, error)
	// OfApprovals returns the calls that used the approvals ids, by
	// approval id.
	OfApprovals(ctx context.Context, ids []string) (map[string]GatewayCall, error)
	// OfConversation returns owner's conversation's calls, oldest first.
	OfConversation(ctx context.Context, owner, conversationID string) ([]GatewayCall, error)
	// Link records that the provider's mcp_call item itemID (of response)
	// reported the call of k (turn "" matches any turn of the
	// conversation), and returns it; false when no call matches that no
	// other item reported.
	Link(ctx context.Context, k CallKey, itemID, response string) (GatewayCall, bool, error)
}
