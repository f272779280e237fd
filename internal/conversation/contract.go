package conversation

import (
	"errors"
)

// The channels every replica listens on (Postgres LISTEN/NOTIFY): a
// committed batch of a conversation's events, {"c": id, "id": last}; and
// Signal as JSON.
const (
	ChannelEvents  = "toolgate_events"
	ChannelSignals = "toolgate_signals"
)

// Signal asks every replica to act on a conversation or a user: the one
// running the turn acts, the others ignore it.
type Signal struct {
	Op             string `json:"op"` // SignalCancel, SignalDeleted, SignalStopUser
	ConversationID string `json:"c,omitempty"`
	Turn           string `json:"turn,omitempty"`
	UserID         string `json:"u,omitempty"`
}

// Signal ops.
const (
	SignalCancel   = "cancel"    // cancel Turn in ConversationID
	SignalDeleted  = "deleted"   // ConversationID was deleted: end its streams
	SignalStopUser = "stop_user" // an admin disabled UserID: stop its turns
)

// EventNameDeleted ends the event streams of a conversation that was deleted.
const EventNameDeleted = "conversation.deleted"

// ErrDeleted ends a subscription: the conversation was deleted.
var ErrDeleted = errors.New("the conversation was deleted")

// EventsNotification is a notification on ChannelEvents: one
// conversation's last event id (C, ID), or many (B).
type EventsNotification struct {
	C  string `json:"c"`
	ID int64  `json:"id"`
	B  []struct {
		C  string `json:"c"`
		ID int64  `json:"id"`
	} `json:"b"`
}

// ReasonUnverified is why a tool that would run unasked asks in direct
// mode when Toolgate could not check its current definition: its server
// did not list in time (or failed), or its listing left the tool out.
const ReasonUnverified = "unverified"

// NoticeServerUnchecked: in direct mode the server could not be listed
// before the request, so its tools that would run unasked ask.
const NoticeServerUnchecked = "server_unchecked"

// CodeTurnNotRunning is the code of Turns.StillRuns's error: the turn no
// longer runs in its conversation (another replica took it over, or the
// conversation is gone).
const CodeTurnNotRunning = "turn_not_running"

// CodeStorageFailed is the code of a turn stopped because what the model
// sent could not be stored.
const CodeStorageFailed = "storage_failed"

// CodeStoppedByUser ends a turn whose decisions stopped it: the person
// denied a request with stop, which denied the rest of its response too,
// and nothing went to the model.
const CodeStoppedByUser = "stopped_by_user"

// StoppedPrefix begins the reason the model gets, with the person's next
// message, for a request a stop denied; the person's reason follows.
const StoppedPrefix = "The user stopped here: this and the other tool calls still waiting in that response were denied and did not run."
