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

// UserLoad is what the per-user limits count for one user.
type UserLoad struct {
	Running       int        // conversations with a turn running
	Messages      int        // messages the user sent within the window
	OldestMessage *time.Time // the oldest of those
	Now           time.Time  // the database's clock when counting
}

// DecisionsLocked is what Repo.Turns.LockDecisions read.
type DecisionsLocked struct {
	Conversation Conversation
	Approvals    []Approval  // the ones asked for, locked
	Policies     policy.Read // policy_version and the owner's personal policies
	Load         *UserLoad   // when asked for
	// Now is the database's clock once the conversation and Approvals were
	// locked: a request whose expires_at is not after it is out of time.
	Now time.Time
}

// MessageStart is what Repo.Turns.StartMessage is asked to do.
type MessageStart struct {
	Owner          string
	ConversationID string        // "": create the conversation NewID, titled Title
	NewID, Title   string        // for a new conversation
	LoadWindow     time.Duration // > 0: count the owner's load (UserLoad) in this window
	Item           Item          // the person's message, appended to the transcript
}

// MessageStarted is what Repo.Turns.StartMessage read and wrote.
type MessageStarted struct {
	Conversation Conversation
	Load         *UserLoad  // when asked for
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
}
