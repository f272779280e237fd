package policy

import (
	"context"
)

// ChangeKind names what a committed settings change touched, so a page
// knows what to read again. It never carries the change itself: a page
// reads that through the API, as its caller.
type ChangeKind string

// The kinds of change a settings stream says (docs/sse-events.md).
const (
	// ChangeWorkspace is a change policy_version covers: the global
	// settings, a workspace tool policy or lock, a server's default, an
	// argument rule, a server or its tools.
	ChangeWorkspace ChangeKind = "workspace"
	// ChangePersonal is a change to one person's own tool policies; only
	// that person's streams hear of it.
	ChangePersonal ChangeKind = "personal"
	// ChangeCard is a change to a tool's approval card.
	ChangeCard ChangeKind = "card"
	// ChangeDecisionHook is a change to a decision hook (admins only).
	ChangeDecisionHook ChangeKind = "decision_hook"
	// ChangeWebhook is a change to a webhook (admins only).
	ChangeWebhook ChangeKind = "webhook"
	// ChangeServer is a change to a server the workspace version does not
	// follow (its result masking switch).
	ChangeServer ChangeKind = "server"
	// ChangeResync says that changes may have been missed (the
	// notification connection was lost, or a stream resumed behind the
	// version): read everything again.
	ChangeResync ChangeKind = "resync"
)

// Change is one committed change as a replica heard of it.
type Change struct {
	Kind    ChangeKind
	Version int64  // policy_version after a workspace change (0: not known)
	UserID  string // ChangePersonal: whose policies
}

// Version returns policy_version: where a settings stream starts.
func (s *Requests) Version(ctx context.Context) (int64, error) {
	v, _, err := s.store.PolicyVersion(ctx, "")
	return v, err
}
