package conversation

import (
	"time"
)

// Observer hears what a Service does that metrics count. Its methods may be
// called from several goroutines at once and must not block.
type Observer interface {
	// LeaseTakeover: this replica closed a turn because its lease expired.
	LeaseTakeover()
	// UpstreamFirstEvent: an upstream request took d to its first event.
	UpstreamFirstEvent(d time.Duration)
	// ApprovalExpired: this replica expired an approval request
	// (APPROVAL_TTL) at at.
	ApprovalExpired(id string, at time.Time)
	// EventWrite: one write of text deltas carried conversations and took
	// took.
	EventWrite(conversations int, took time.Duration)
}

// NopObserver hears nothing; it is the Observer when Options has none.
type NopObserver struct{}

func (NopObserver) LeaseTakeover() {}

func (NopObserver) UpstreamFirstEvent(time.Duration) {}

func (NopObserver) ApprovalExpired(string, time.Time) {}

func (NopObserver) EventWrite(int, time.Duration) {}
