// Package record keeps the record of what ran in a conversation: the
// read-back of a response whose end a turn did not see, the link between
// the provider's calls and the MCP face's records, receipts, and the
// closing and settling of approval requests with their audit entries.
package record

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// Keeper writes the record of what ran, in the transactions its callers
// open, and reads responses back from the provider.
type Keeper struct {
	store    conversation.Store
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
	grants       Grants
	allowedBy    func([]policy.ServerTools, *conversation.UpstreamItem) *conversation.AllowedBy
	checkedBy    func(*conversation.RuleCheck) *conversation.AllowedBy
}

// ItemOf is the transcript item of a finished output item of response;
// false for the types a transcript does not keep. groups say why a call ran.
type ItemOf func(u *conversation.UpstreamItem, response string, groups []policy.ServerTools) (conversation.Item, bool)

// Grants are the grants a request of owner's in the conversation would
// use, read in r, by server and tool.
type Grants func(ctx context.Context, r conversation.Repo, owner, conversationID string) (map[string]map[string]policy.GrantRef, error)

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
	// Grants reads the grants a request would use.
	Grants Grants
	// AllowedBy says why a call ran, as a request built from groups treated it.
	AllowedBy func(groups []policy.ServerTools, u *conversation.UpstreamItem) *conversation.AllowedBy
	// CheckedBy is what let a call run on a request that c (the rules, a
	// hook or the policy) answered without a card; nil when the person did.
	CheckedBy func(c *conversation.RuleCheck) *conversation.AllowedBy
}

// New returns the Keeper that writes in store and through policies' audit
// log and reads responses back from upstream.
func New(store conversation.Store, policies conversation.Policies, upstream conversation.Upstream, log *slog.Logger, opts Options) *Keeper {
	k := &Keeper{store: store, policies: policies, upstream: upstream, log: log, gateway: opts.Gateway, approvalTTL: opts.ApprovalTTL,
		readBackWait: opts.ReadBackWait, decision: opts.Decision, itemOf: opts.ItemOf, grants: opts.Grants,
		allowedBy: opts.AllowedBy, checkedBy: opts.CheckedBy}
	if k.readBackWait == 0 {
		k.readBackWait = DefaultReadBackWait
	}
	return k
}

// Gateway reports whether calls go through the MCP face.
func (k *Keeper) Gateway() bool { return k.gateway }

// Store is where the record is kept.
func (k *Keeper) Store() conversation.Store { return k.store }

// Policies are the ports the record asks and audits through.
func (k *Keeper) Policies() conversation.Policies { return k.policies }

// Grants are the grants a request of owner's in the conversation would
// use, read in r.
func (k *Keeper) Grants(ctx context.Context, r conversation.Repo, owner, conversationID string) (map[string]map[string]policy.GrantRef, error) {
	return k.grants(ctx, r, owner, conversationID)
}

// AllowedBy says why a call ran, as a request built from groups treated it.
func (k *Keeper) AllowedBy(groups []policy.ServerTools, u *conversation.UpstreamItem) *conversation.AllowedBy {
	return k.allowedBy(groups, u)
}

// CheckedBy is what let a call run on a request that c (the rules, a hook
// or the policy) answered without a card; nil when the person did.
func (k *Keeper) CheckedBy(c *conversation.RuleCheck) *conversation.AllowedBy { return k.checkedBy(c) }

// Decision is the decision.recorded event of request a.
func (k *Keeper) Decision(a conversation.Approval) conversation.DecisionEvent { return k.decision(a) }

// event is the stored form of an event of the contract's payload types,
// which always encode.
func event(name string, data any) conversation.NewEvent {
	raw, _ := json.Marshal(data)
	return conversation.NewEvent{Name: name, Data: raw}
}
