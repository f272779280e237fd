package recovery

import (
	"encoding/json"
	"log/slog"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/record"
)

// Closer closes the turn of a replica that died (its lease expired), from
// what its events and the response read back say.
type Closer struct {
	store  conversation.Store
	keeper *record.Keeper
	log    *slog.Logger
	now    func() time.Time
	poke   func(conversationID string)
}

// NewCloser returns the Closer that closes turns in store, keeping their
// record with keeper, and pokes the streams of a conversation it closed a
// turn in.
func NewCloser(store conversation.Store, keeper *record.Keeper, log *slog.Logger, poke func(conversationID string)) *Closer {
	return &Closer{store: store, keeper: keeper, log: log, now: time.Now, poke: poke}
}

// event is the stored form of an event of the contract's payload types,
// which always encode.
func event(name string, data any) conversation.NewEvent {
	raw, _ := json.Marshal(data)
	return conversation.NewEvent{Name: name, Data: raw}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
