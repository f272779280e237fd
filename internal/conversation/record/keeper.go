// Package record keeps the record of what ran in a conversation: the
// read-back of a response whose end a turn did not see, the link between
// the provider's calls and the MCP face's records, receipts, and the
// closing and settling of approval requests with their audit entries.
package record

import (
	"encoding/json"
	"log/slog"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// Keeper writes the record of what ran, in the transactions its callers
// open, and reads responses back from the provider.
type Keeper struct {
	policies conversation.Policies
	upstream conversation.Upstream
	log      *slog.Logger
	// gateway: the provider reaches the MCP servers through Toolgate's MCP
	// face, so the face's records say which calls ran.
	gateway bool
	// approvalTTL is APPROVAL_TTL: how long a request waits.
	approvalTTL time.Duration
	// readBackWait bounds how long reading back a response whose end a
	// turn did not see waits for it to finish (reconcile.go).
	readBackWait time.Duration
	decision     func(conversation.Approval) conversation.DecisionEvent
	itemOf       ItemOf
}

// ItemOf is the transcript item of a finished output item of response;
// false for the types a transcript does not keep. groups say why a call ran.
type ItemOf func(u *conversation.UpstreamItem, response string, groups []policy.ServerTools) (conversation.Item, bool)

// Options are a Keeper's settings and what it needs of the engine.
type Options struct {
	// Gateway is MCP_ROUTE=gateway.
	Gateway bool
	// ApprovalTTL is APPROVAL_TTL; ReadBackWait bounds a read-back
	// (0: DefaultReadBackWait).
	ApprovalTTL  time.Duration
	ReadBackWait time.Duration
	// Decision is the decision.recorded event of a request Toolgate closed.
	Decision func(conversation.Approval) conversation.DecisionEvent
	// ItemOf makes the transcript item of an item read back.
	ItemOf ItemOf
}

// New returns the Keeper that writes through policies' audit log and
// reads responses back from upstream.
func New(policies conversation.Policies, upstream conversation.Upstream, log *slog.Logger, opts Options) *Keeper {
	k := &Keeper{policies: policies, upstream: upstream, log: log, gateway: opts.Gateway, approvalTTL: opts.ApprovalTTL,
		readBackWait: opts.ReadBackWait, decision: opts.Decision, itemOf: opts.ItemOf}
	if k.readBackWait == 0 {
		k.readBackWait = DefaultReadBackWait
	}
	return k
}

// Gateway reports whether calls go through the MCP face.
func (k *Keeper) Gateway() bool { return k.gateway }

// event is the stored form of an event of the contract's payload types,
// which always encode.
func event(name string, data any) conversation.NewEvent {
	raw, _ := json.Marshal(data)
	return conversation.NewEvent{Name: name, Data: raw}
}
