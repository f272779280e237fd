package policy

import (
	"context"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
)

// Widened is the workspace default a wider decision set: a server's
// default (ServerLabel set) or the global default (ServerLabel ""), from
// Before to never. Changed is false when it was never already.
type Widened struct {
	ServerLabel string
	Before      *Policy // nil: the server had no default of its own
	Changed     bool
}

// WidenDefault lets the tools without a workspace policy of their own run
// without asking, as part of an admin's decision on an approval card, in
// the decision's transaction r: label's server default becomes never, or,
// with label "", the global default. It stores and audits the change
// exactly as the settings page's change does (server.update,
// settings.update, with u as the actor).
//
// It only ever loosens a default that nothing holds: a member is refused
// (403 admin_only); a default an admin locked, or one that blocks, is
// kept (403 policy_locked, 409 default_blocked): changing those is a
// deliberate step on the settings page. Tool policies, their locks and
// blocks, and the "ask for everything" switch are not touched, so they
// still win.
func (s *Policies) WidenDefault(ctx context.Context, r Repo, u auth.User, label string) (Widened, error) {
	if u.ID == "" {
		return Widened{}, errNoCaller
	}
	if !u.IsAdmin() {
		return Widened{}, apperr.New(apperr.Forbidden, "admin_only",
			"only an admin may approve for every tool of a server or for everything (it changes the workspace's default policy); approve this call once, or change your own policies in the settings; nothing was recorded")
	}
	never := Never
	if label == "" {
		return s.widenGlobal(ctx, r, u, never)
	}
	srv, err := r.Servers.Get(ctx, label, true)
	if err != nil {
		return Widened{}, err
	}
	if err := kept("server "+label+"'s default policy", srv.DefaultPolicyLocked, srv.DefaultPolicy); err != nil {
		return Widened{}, err
	}
	before, after, err := s.UpdateServerIn(ctx, r, u, label, ServerPatch{DefaultPolicy: Optional[Policy]{Set: true, Value: &never}})
	if err != nil {
		return Widened{}, err
	}
	return Widened{ServerLabel: label, Before: before.DefaultPolicy, Changed: serverChanged(before, after)}, nil
}

func (s *Policies) widenGlobal(ctx context.Context, r Repo, u auth.User, never Policy) (Widened, error) {
	cur, err := r.Settings.Get(ctx)
	if err != nil {
		return Widened{}, err
	}
	if err := kept("the global default policy", cur.DefaultPolicyLocked, &cur.DefaultPolicy); err != nil {
		return Widened{}, err
	}
	before, after, err := s.updateSettingsIn(ctx, r, u, SettingsPatch{DefaultPolicy: &never})
	if err != nil {
		return Widened{}, err
	}
	was := before.DefaultPolicy
	return Widened{Before: &was, Changed: after.DefaultPolicy != was}, nil
}

// kept refuses to widen a default an admin locked or that blocks.
func kept(what string, locked bool, p *Policy) error {
	switch {
	case locked && (p == nil || *p != Never):
		return apperr.New(apperr.Forbidden, "policy_locked",
			"%s is locked by an admin, so a decision does not change it; change it (or unlock it) in the settings; nothing was recorded", what)
	case p != nil && *p == Blocked:
		return apperr.New(apperr.Conflict, "default_blocked",
			"%s is blocked, so a decision does not change it (a block always wins); change it in the settings; nothing was recorded", what)
	}
	return nil
}
