package conversation

import (
	"time"

	"github.com/toolgate/toolgate/internal/policy"
)

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
// PutMany.
type ConvEvents struct {
	ConversationID string
	Turn           string
	First          int64 // the id of Events[0] (PutMany)
	Events         []NewEvent
}

// TakeoverGap is how far a takeover moves a conversation's event counter
// on before storing its events: beyond the ids the replica that ran the
// turn may have streamed without storing (a running turn numbers its text
// deltas itself, streams them at once and stores them behind, at most
// eventlog's bound on deltas not yet stored; see Leases.LockExpiredTurn).
const TakeoverGap = 4096

// StoredEvent is a stream event as stored, with its id in the conversation.
type StoredEvent struct {
	ID     int64
	TurnID string
	Name   string
	Data   []byte
}

// UserLoad is what the per-user limits counted for one user.
type UserLoad struct {
	Running       int        // conversations with a turn running
	Messages      int        // messages the user sent within the window (before this one)
	OldestMessage *time.Time // the oldest of those
	Now           time.Time  // the database's clock when counting
}

// DecisionsLocked is what Repo.Turns.LockDecisions read.
type DecisionsLocked struct {
	Conversation Conversation
	Approvals    []Approval  // the ones asked for, locked
	Policies     policy.Read // policy_version and the owner's personal policies
	// Cards are the approval cards of the requests' tools that an admin
	// set (a tool missing has the default card).
	Cards []policy.ApprovalCard
	// Now is the database's clock once the conversation and Approvals were
	// locked: a request whose expires_at is not after it is out of time.
	Now time.Time
}

// MessageStart is what Repo.Turns.StartMessage is asked to do.
type MessageStart struct {
	Owner          string
	ConversationID string // "": create the conversation NewID, titled Title
	NewID, Title   string // for a new conversation
	Item           Item   // the person's message, appended to the transcript
}

// MessageStarted is what Repo.Turns.StartMessage read and wrote.
type MessageStarted struct {
	Conversation Conversation
	Previous     []Approval // of an existing conversation: its last response's approval requests, locked
	Now          time.Time  // the database's clock once Previous was locked (zero without Previous)
	Item         Item       // the message as appended
}

// TurnOpening is what Repo.Turns.Open records.
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
	// Limits are the per-user limits the opening checks against Owner's
	// counters, under their row's lock, and Message counts the turn as a
	// message (USER_MESSAGES_PER_MINUTE): at a limit Open fails with a
	// *LimitReached and its transaction writes nothing.
	Limits  Limits
	Message bool
	// Opened receives what Open stored (the last event's id, the owner's
	// grants) once it is stored. When set, Open may send its statement
	// with the transaction's COMMIT (one round trip less) and return
	// zeros: its error is then the commit's.
	Opened func(last int64, grants []Grant)
}

// LimitReached is Open's refusal at a per-user limit: what was counted.
type LimitReached struct{ Load UserLoad }

func (e *LimitReached) Error() string { return "a per-user turn limit holds" }
