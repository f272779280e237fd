package policy

import (
	"context"
	"slices"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
)

// Layer names whose policy a change is for: the workspace's (admins) or the
// caller's own.
type Layer string

// The policy layers.
const (
	LayerWorkspace Layer = "workspace"
	LayerUser      Layer = "user"
)

// ParseLayer reads the layer query parameter: "" means workspace for an
// admin and user for a member; a member asking for workspace is refused.
func ParseLayer(u auth.User, s string) (Layer, error) {
	switch Layer(s) {
	case "":
		if u.IsAdmin() {
			return LayerWorkspace, nil
		}
		return LayerUser, nil
	case LayerUser:
		return LayerUser, nil
	case LayerWorkspace:
		if !u.IsAdmin() {
			return "", errAdminOnly("workspace policies")
		}
		return LayerWorkspace, nil
	}
	return "", apperr.Invalidf("invalid_layer", "layer", "layer must be workspace or user (got %q)", s)
}

// errNoCaller is a service call without a signed-in user: a wiring bug,
// never "anyone".
var errNoCaller = apperr.New(apperr.Internal, "no_caller", "the request carries no signed-in user")

func errAdminOnly(what string) error {
	return apperr.New(apperr.Forbidden, "admin_only",
		"only an admin can change %s; ask an admin, or set a personal policy with ?layer=user", what)
}

// Caller is the signed-in user of ctx.
func Caller(ctx context.Context) (auth.User, error) {
	u, ok := auth.UserFrom(ctx)
	if !ok || u.ID == "" {
		return auth.User{}, errNoCaller
	}
	return u, nil
}

// RequireAdmin returns the caller if they are an admin.
func RequireAdmin(ctx context.Context, what string) (auth.User, error) {
	u, err := Caller(ctx)
	if err != nil {
		return u, err
	}
	if !u.IsAdmin() {
		return u, errAdminOnly(what)
	}
	return u, nil
}

// checkPersonal refuses a personal policy p for t that would loosen a locked
// workspace setting or an admin's block.
func checkPersonal(srv Server, set Settings, t Tool, p Policy) error {
	t.userGrant = nil
	w := Workspace(resolveInput(srv, set, t))
	what := map[Source]string{
		FromTool:   "the workspace policy for " + quote(t.Name),
		FromServer: "server " + srv.Label + "'s default policy",
		FromGlobal: "the global default policy",
	}[w.Source]
	switch {
	case w.Policy == Blocked && p != Blocked:
		return apperr.New(apperr.Forbidden, "policy_locked",
			"%s on server %s is blocked by %s, set by an admin; a personal policy cannot unblock it", t.Name, srv.Label, what)
	case w.Locked && Stricter(w.Policy, p):
		return apperr.New(apperr.Forbidden, "policy_locked",
			"%s is locked at %s for %s on server %s; a personal policy can only be as strict or stricter (ask an admin to unlock it)",
			what, w.Policy, t.Name, srv.Label)
	}
	return nil
}

func quote(s string) string { return "\u201c" + s + "\u201d" }

// setUserPolicies sets or removes (nil) u's personal policies for label's
// tools in r, all or nothing, audited with u as the actor.
func (s *Policies) setUserPolicies(ctx context.Context, r Repo, u auth.User, label string, policies map[string]*Policy) error {
	srv, err := r.Servers.Get(ctx, label, true)
	if err != nil {
		return err
	}
	set, err := r.Settings.Get(ctx)
	if err != nil {
		return err
	}
	tools, err := r.Tools.List(ctx, label)
	if err != nil {
		return err
	}
	mine, err := r.Policies.OfUser(ctx, u.ID, label)
	if err != nil {
		return err
	}
	have := map[string]UserPolicy{}
	for _, p := range mine {
		have[p.ToolName] = p
	}
	for _, name := range sortedKeys(policies) {
		p := policies[name]
		old, had := have[name]
		t := FindTool(tools, label, name)
		if p != nil {
			if err := checkPersonal(srv, set, t, *p); err != nil {
				return err
			}
		}
		switch {
		case p == nil && !had:
			continue
		case p != nil && had && old.Policy == *p && (*p != Never || old.GrantedDigest == t.Digest):
			continue // no change, no audit entry
		case p == nil:
			if _, err := r.Policies.DeleteUser(ctx, u.ID, label, name); err != nil {
				return err
			}
		default:
			up := UserPolicy{UserID: u.ID, ServerLabel: label, ToolName: name, Policy: *p}
			up.GrantedDigest, up.GrantedDefinition = granted(t, *p)
			if err := r.Policies.UpsertUser(ctx, up); err != nil {
				return err
			}
		}
		action, before, after := ActionPolicySet, userPolicyState(old.Policy, had), userPolicyState(deref(p), p != nil)
		if p == nil {
			action = ActionPolicyDelete
		}
		if err := WriteAudit(ctx, r, u, action, &label, &name, before, after); err != nil {
			return err
		}
	}
	return nil
}

// FindTool returns the named tool of tools, or a tool known by name only.
func FindTool(tools []Tool, label, name string) Tool {
	if i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name == name }); i >= 0 {
		return tools[i]
	}
	return Tool{DiscoveredTool: DiscoveredTool{Name: name}, ServerLabel: label}
}

// granted is what a policy p for t records: for never, the tool's current
// digest and definition (nothing for a tool not discovered yet).
func granted(t Tool, p Policy) (string, *Definition) {
	if p != Never || !t.Discovered {
		return "", nil
	}
	d := DefinitionOf(t.DiscoveredTool)
	return t.Digest, &d
}

func userPolicyState(p Policy, ok bool) any {
	if !ok {
		return nil
	}
	return map[string]any{"policy": p, "layer": LayerUser}
}
