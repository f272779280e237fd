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

// Repo is the persistence the conversation service needs. Methods return
// apperr errors: NotFound for a missing conversation.
//
// Methods that take an owner only see that user's conversations: another
// user's conversation, its items, approvals and allowances are reported
// (or listed) exactly as a missing one. The rest act on a conversation the
// caller has already found under its owner's scope (and holds locked).
type Repo interface {
	// ClaimIdempotencyKey records, in the transaction that opens turn, that
	// the request holding user's Idempotency-Key (as holder) started it; a
	// conflict when holder no longer holds the key (the turn must not start).
	ClaimIdempotencyKey(ctx context.Context, userID, key, holder, conversationID, turn string) error
	CreateConversation(ctx context.Context, owner, id, title string) (Conversation, error)
	ListConversations(ctx context.Context, owner string, limit int) ([]Conversation, error)
	// Conversation returns one conversation; lock holds it until the
	// transaction ends, which serialises every turn and decision on it.
	Conversation(ctx context.Context, owner, id string, lock bool) (Conversation, error)
	// LockDecisions does in one round trip what Conversation (locked),
	// then Approvals (ids, locked), the policy read of owner (policy
	// version and personal policies, as Policies.Effective makes it) and,
	// when loadWindow > 0, UserLoad would.
	LockDecisions(ctx context.Context, owner, conversationID string, ids []string, loadWindow time.Duration) (DecisionsLocked, error)
	// StartMessage does in one round trip what a message's turn starts
	// with: Conversation (locked; CreateConversation when
	// m.ConversationID is empty), UserLoad (when m.LoadWindow > 0), the
	// approval requests of the conversation's last response
	// (ResponseApprovals) and AppendItem (m.Item), in that order. The
	// caller judges what they read and returns an error (rolling back)
	// to refuse. NotFound if the conversation is missing or another's.
	StartMessage(ctx context.Context, m MessageStart) (MessageStarted, error)
	// User returns an account (a conversation's owner) by id.
	User(ctx context.Context, id string) (auth.User, error)
	RenameConversation(ctx context.Context, owner, id, title string) (Conversation, error)
	DeleteConversation(ctx context.Context, owner, id string) error

	// UserLoad locks owner's turn starts until the transaction ends and
	// counts what the per-user limits look at.
	UserLoad(ctx context.Context, owner string, window time.Duration) (UserLoad, error)

	// StartTurn marks turn as the conversation's running turn, leased to
	// the replica owner for ttl.
	StartTurn(ctx context.Context, id, turn, owner string, ttl time.Duration) error
	// OpenTurn does in one round trip what StartTurn, MarkSent (o.SentIDs),
	// AppendEvents (o.Events), Grants (the live ones of o.Owner that apply
	// in the conversation at o.Now) and, when o.Policies is set, the policy
	// read of the turn's request (policy_version and o.Owner's personal
	// policies, stored in *o.Policies) would: it returns the id of the
	// last event stored and the grants. NotFound if the conversation is
	// missing.
	OpenTurn(ctx context.Context, o TurnOpening) (last int64, grants []Grant, err error)
	// EndTurn clears the running turn (and its lease) if it is still turn,
	// and when lastResponse is not empty makes it the conversation's last
	// response.
	EndTurn(ctx context.Context, id, turn, lastResponse string) error
	// ContinueTurn moves the conversation's last response on to response
	// while turn keeps running (its follow-up answers requests that rules
	// decided); false when turn no longer runs in the conversation.
	ContinueTurn(ctx context.Context, id, turn, response string) (bool, error)
	// RenewLeases extends owner's leases on turns by ttl and returns the
	// turns it still holds.
	RenewLeases(ctx context.Context, owner string, turns []string, ttl time.Duration) ([]string, error)
	// ExpiredTurns lists up to limit running turns whose lease ran out.
	ExpiredTurns(ctx context.Context, limit int) ([]RunningTurn, error)
	// LockExpiredTurn locks the conversation (in a transaction) if turn
	// still runs in it on an expired lease.
	LockExpiredTurn(ctx context.Context, conversationID, turn string) (bool, error)

	// AppendMany stores the events of many conversations in one statement,
	// each numbered after its conversation's last one as AppendEvents
	// numbers them and announced the same way, and returns each batch's
	// conversation's last id (0 when it was deleted). Only for events no
	// webhook can want (text deltas): it queues no deliveries. Each
	// conversation must appear in one batch at most.
	AppendMany(ctx context.Context, batches []ConvEvents) ([]int64, error)
	// AppendEvents stores stream events after the conversation's last one
	// and announces them to every replica; it returns the last id given.
	AppendEvents(ctx context.Context, conversationID, turn string, evs []NewEvent) (int64, error)
	// EventsAfter returns up to limit events after id after, in order.
	EventsAfter(ctx context.Context, conversationID string, after int64, limit int) ([]StoredEvent, error)
	// TurnEvents returns every event of one turn, in order.
	TurnEvents(ctx context.Context, conversationID, turn string) ([]StoredEvent, error)
	// TurnStart is the id just before turn's first event (-1: none yet).
	TurnStart(ctx context.Context, conversationID, turn string) (int64, error)
	// Notify sends a notification to every replica.
	Notify(ctx context.Context, channel, payload string) error

	// MarkSent records that turn carries the answers to ids, before it
	// sends them; UnmarkSent undoes it for answers known not delivered.
	MarkSent(ctx context.Context, ids []string, turn string) error
	UnmarkSent(ctx context.Context, turn string) error
	// SentApprovals returns (locked) the requests whose answers turn carried.
	SentApprovals(ctx context.Context, conversationID, turn string) ([]Approval, error)
	// SupersedeOrphans supersedes, with reason, the pending approval
	// requests of conversations with no running turn whose response is not
	// the conversation's last: they came from a response that never
	// completed and can no longer be answered.
	SupersedeOrphans(ctx context.Context, reason string) (int64, error)

	// SetConversationTools stores the conversation's choice of servers and
	// tools and returns the conversation.
	SetConversationTools(ctx context.Context, owner, id string, sel policy.Selection) (Conversation, error)

	// ExpiringConversations lists up to limit conversations with no
	// running turn holding a pending approval request older than its
	// server's approval_ttl_seconds or, where the server sets none, ttl
	// (zero or less: only servers that set one expire their requests).
	ExpiringConversations(ctx context.Context, ttl time.Duration, limit int) ([]string, error)
	// ExpireApprovals locks the conversation if no turn runs in it and
	// expires its pending requests that are too old as ExpiringConversations
	// judges, each at most once, with reason(request) as the decision's
	// reason (ServerTTLSeconds set as read); it returns the conversation's
	// owner and the requests expired.
	ExpireApprovals(ctx context.Context, conversationID string, ttl time.Duration, reason func(Approval) string) (string, []Approval, error)

	// AppendItem adds it at the end of the transcript and returns it with
	// its sequence number and time.
	AppendItem(ctx context.Context, conversationID string, it Item) (Item, error)
	Items(ctx context.Context, owner, conversationID string) ([]Item, error)

	InsertApproval(ctx context.Context, a Approval) error
	// Approvals returns the conversation's approval requests, oldest first;
	// with ids, only those; lock holds them until the transaction ends.
	Approvals(ctx context.Context, owner, conversationID string, ids []string, lock bool) ([]Approval, error)
	// LastApproval returns the conversation's latest approval request of
	// server's tool; false when there is none.
	LastApproval(ctx context.Context, owner, conversationID, server, tool string) (Approval, bool, error)
	// ResponseApprovals returns the approval requests one response made,
	// oldest first, locked.
	ResponseApprovals(ctx context.Context, owner, conversationID, response string) ([]Approval, error)
	// Decide stores a's state and decision fields.
	Decide(ctx context.Context, owner string, a Approval) error
	// MarkAnswered records that response carried the answers to ids.
	MarkAnswered(ctx context.Context, ids []string, response string) error

	// ToolApprovals returns a tool's most recent approval requests (at
	// most q.Limit), newest first, with their conversations' owners.
	ToolApprovals(ctx context.Context, q ToolApprovalsQuery) ([]OwnedApproval, error)

	// Grants returns owner's grants as f says, newest first (live ones
	// only unless f.Ended); another owner's are never returned.
	Grants(ctx context.Context, owner string, f GrantFilter) ([]Grant, error)
	// AddGrant stores g (for the owner of g's approval request).
	AddGrant(ctx context.Context, owner string, g Grant) error
	// RevokeGrant revokes owner's grant id at now; revoked is false when it
	// had already ended (revoked or expired). NotFound for a grant of
	// another owner or none.
	RevokeGrant(ctx context.Context, owner, id string, now time.Time) (g Grant, revoked bool, err error)

	GatewayRepo
}

// RunningTurn is a turn some replica holds (or held) a lease on.
type RunningTurn struct {
	ConversationID string
	OwnerID        string // the conversation's owner
	Turn           string
	LeaseOwner     string // the replica
}

// NewEvent is a stream event to store: its name and JSON payload.
type NewEvent struct {
	Name string
	Data []byte
}

// ConvEvents is one conversation's events (all of one turn) in an
// AppendMany.
type ConvEvents struct {
	ConversationID string
	Turn           string
	Events         []NewEvent
}

// StoredEvent is a stream event as stored, with its id in the conversation.
type StoredEvent struct {
	ID     int64
	TurnID string
	Name   string
	Data   []byte
}

// UserLoad is what the per-user limits count for one user.
type UserLoad struct {
	Running       int        // conversations with a turn running
	Messages      int        // messages the user sent within the window
	OldestMessage *time.Time // the oldest of those
	Now           time.Time  // the database's clock when counting
}

// DecisionsLocked is what Repo.LockDecisions read.
type DecisionsLocked struct {
	Conversation Conversation
	Approvals    []Approval  // the ones asked for, locked
	Policies     policy.Read // policy_version and the owner's personal policies
	Load         *UserLoad   // when asked for
	// Now is the database's clock once the conversation and Approvals were
	// locked: a request whose expires_at is not after it is out of time.
	Now time.Time
}

// MessageStart is what Repo.StartMessage is asked to do.
type MessageStart struct {
	Owner          string
	ConversationID string        // "": create the conversation NewID, titled Title
	NewID, Title   string        // for a new conversation
	LoadWindow     time.Duration // > 0: count the owner's load (UserLoad) in this window
	Item           Item          // the person's message, appended to the transcript
}

// MessageStarted is what Repo.StartMessage read and wrote.
type MessageStarted struct {
	Conversation Conversation
	Load         *UserLoad  // when asked for
	Previous     []Approval // of an existing conversation: its last response's approval requests, locked
	Now          time.Time  // the database's clock once Previous was locked (zero without Previous)
	Item         Item       // the message as appended
}

// TurnOpening is what Repo.OpenTurn records.
type TurnOpening struct {
	ConversationID string
	TurnID         string
	Owner          string // the conversation's owner, whose grants are read
	Replica        string // the replica the turn is leased to
	LeaseTTL       time.Duration
	SentIDs        []string   // approval requests whose answers the turn carries
	Events         []NewEvent // the turn's opening events
	Now            time.Time  // grants expire as of it
	// Policies, when set, receives the policy read of the turn's request
	// (policy_version and Owner's personal policies), made in the same
	// statement.
	Policies *policy.Read
}
