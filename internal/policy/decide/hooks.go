package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/hooks"
	"github.com/toolgate/toolgate/internal/policy"
	"net/url"
	"time"
)

// internalHosts is the part of the URL policy that tells whether a host is
// on the operator's own network (netguard.Guard implements it): plain http
// is only allowed there, since a hook's request carries the call's
// arguments.
type internalHosts interface {
	Internal(ctx context.Context, host string) bool
}

func (s *Hooks) hooks() *hooks.Client {
	if s.hookClient == nil {
		return defaultHookClient
	}
	return s.hookClient
}

var defaultHookClient = hooks.NewClient(nil)

func (s *Hooks) checkHookURL(ctx context.Context, raw string) error {
	if s.urls == nil {
		return nil
	}
	if err := s.urls.CheckURL(ctx, raw); err != nil {
		return apperr.Invalidf("url_not_allowed", "url", "the hook's url is not allowed: %s", err.Error())
	}
	u, _ := url.Parse(raw)
	if ih, ok := s.urls.(internalHosts); ok && u.Scheme == "http" && !ih.Internal(ctx, u.Hostname()) {
		return apperr.Invalidf("url_not_allowed", "url",
			"the hook's url must use https: plain http is only allowed to hosts on your own network that MCP_ALLOWED_HOSTS or MCP_ALLOW_PRIVATE allow")
	}
	return nil
}

// hookScope checks that label's server exists ("" is the workspace).
func hookScope(ctx context.Context, r policy.Repo, label string, lock bool) error {
	if label == "" {
		return nil
	}
	_, err := r.Servers.Get(ctx, label, lock)
	return err
}

func errHookNotSet(label string) error {
	if label == "" {
		return apperr.NotFoundf("decision_hook_not_set", "the workspace has no decision hook; PUT one first")
	}
	return apperr.NotFoundf("decision_hook_not_set", "the server %q has no decision hook; PUT one first", label)
}

// DecisionHook returns a server's hook ("": the workspace's), admins only.
// The secret is left out: it is shown once, when generated.
func (s *Hooks) DecisionHook(ctx context.Context, label string) (policy.DecisionHook, error) {
	if _, err := policy.RequireAdmin(ctx, "decision hooks"); err != nil {
		return policy.DecisionHook{}, err
	}
	h, err := s.loadHook(ctx, label)
	h.Secret = ""
	return h, err
}

func (s *Hooks) loadHook(ctx context.Context, label string) (policy.DecisionHook, error) {
	r := s.store.Repo()
	if err := hookScope(ctx, r, label, false); err != nil {
		return policy.DecisionHook{}, err
	}
	h, ok, err := r.Hooks.Get(ctx, label)
	if err != nil {
		return policy.DecisionHook{}, err
	}
	if !ok {
		return policy.DecisionHook{}, errHookNotSet(label)
	}
	return h, nil
}

// SetDecisionHook creates or replaces a hook, admins only, audited. A new
// hook, or RotateSecret, gets a fresh secret, returned once as secret ("":
// the stored one is kept).
func (s *Hooks) SetDecisionHook(ctx context.Context, label string, in policy.DecisionHookInput) (_ policy.DecisionHook, secret string, _ error) {
	u, err := policy.RequireAdmin(ctx, "decision hooks")
	if err != nil {
		return policy.DecisionHook{}, "", err
	}
	if err := in.Validate(); err != nil {
		return policy.DecisionHook{}, "", err
	}
	if err := s.checkHookURL(ctx, in.URL); err != nil {
		return policy.DecisionHook{}, "", err
	}
	var out policy.DecisionHook
	err = s.store.Tx(ctx, func(r policy.Repo) error {
		if err := hookScope(ctx, r, label, true); err != nil {
			return err
		}
		old, had, err := r.Hooks.Get(ctx, label)
		if err != nil {
			return err
		}
		h := policy.DecisionHook{ServerLabel: label, URL: in.URL, TimeoutMS: int(hooks.DefaultTimeout.Milliseconds()), Enabled: true, UpdatedBy: u.Email}
		if had {
			h.Secret, h.TimeoutMS, h.Enabled = old.Secret, old.TimeoutMS, old.Enabled
		}
		if in.TimeoutMS != nil {
			h.TimeoutMS = *in.TimeoutMS
		}
		if in.Enabled != nil {
			h.Enabled = *in.Enabled
		}
		rotated := !had || in.RotateSecret || old.SecretUnreadable
		if rotated {
			secret = hooks.NewSecret()
			h.Secret = secret
		}
		if out, err = r.Hooks.Put(ctx, h); err != nil {
			return err
		}
		var before any
		if had {
			before = hookSnapshot(old, false)
		}
		return policy.WriteAudit(ctx, r, u, policy.ActionDecisionHookSet, hookServer(label), nil, before, hookSnapshot(h, rotated && had))
	})
	if err != nil {
		return policy.DecisionHook{}, "", err
	}
	out.Secret = ""
	return out, secret, nil
}

// DeleteDecisionHook removes a hook, admins only, audited.
func (s *Hooks) DeleteDecisionHook(ctx context.Context, label string) error {
	u, err := policy.RequireAdmin(ctx, "decision hooks")
	if err != nil {
		return err
	}
	return s.store.Tx(ctx, func(r policy.Repo) error {
		if err := hookScope(ctx, r, label, true); err != nil {
			return err
		}
		old, had, err := r.Hooks.Get(ctx, label)
		if err != nil {
			return err
		}
		if !had {
			return errHookNotSet(label)
		}
		if err := r.Hooks.Delete(ctx, label); err != nil {
			return err
		}
		return policy.WriteAudit(ctx, r, u, policy.ActionDecisionHookDelete, hookServer(label), nil, hookSnapshot(old, false), nil)
	})
}

// TestDecisionHook sends the hook a sample request (test: true, made by
// the caller) and returns what it answered. Nothing is decided or stored.
func (s *Hooks) TestDecisionHook(ctx context.Context, label string) (hooks.Answer, error) {
	u, err := policy.RequireAdmin(ctx, "decision hooks")
	if err != nil {
		return hooks.Answer{}, err
	}
	h, err := s.loadHook(ctx, label)
	if err != nil {
		return hooks.Answer{}, err
	}
	req := hooks.Request{Hook: hooks.HookWorkspace, Server: label, Tool: "example_tool", Test: true,
		Arguments: json.RawMessage(`{"example":"a sample call sent by Send test"}`), User: hookUser(u),
		ConversationID: "conv_test", ApprovalRequestID: "mcpr_test"}
	if label != "" {
		req.Hook = hooks.HookServer
	} else {
		req.Server = "example"
	}
	if h.SecretUnreadable {
		return hooks.Answer{Decision: hooks.Ask, Error: errUnreadable}, nil
	}
	return s.hooks().Ask(ctx, endpoint(h), req), nil
}

const errUnreadable = `its secret does not decrypt with this SECRETS_KEY (it was stored under another key); save the hook with "rotate_secret": true`

func hookServer(label string) *string {
	if label == "" {
		return nil
	}
	return &label
}

func hookUser(u auth.User) hooks.User {
	return hooks.User{ID: u.ID, Email: u.Email, Role: string(u.Role)}
}

// DecideByHooks asks the server's decision hook, then, unless it approved
// or denied, the workspace's, about a call made for u. A hook that is not
// set or not enabled is skipped; one that fails asks. Like argument rules,
// a hook never loosens an admin's decision: for a blocked tool an approval
// becomes deny, for a locked always (or while "ask for everything" is on)
// it becomes ask. An error is returned
// only when the hooks' settings could not be read.
func (s *Hooks) DecideByHooks(ctx context.Context, u auth.User, c policy.HookCall) (policy.HookDecision, error) {
	out := policy.HookDecision{Decision: hooks.Ask}
	r := s.store.Repo()
	for _, scope := range []struct{ label, hook string }{{c.Server, hooks.HookServer}, {"", hooks.HookWorkspace}} {
		h, ok, err := r.Hooks.Get(ctx, scope.label)
		if err != nil {
			return out, err
		}
		if !ok || !h.Enabled {
			continue
		}
		out.Asked++
		if h.SecretUnreadable {
			out.Errors = append(out.Errors, scope.hook+" hook: "+errUnreadable)
			continue
		}
		a := s.hooks().Ask(ctx, endpoint(h), hooks.Request{Hook: scope.hook, Server: c.Server, Tool: c.Tool,
			Arguments: c.Arguments, Redacted: c.Redacted, User: hookUser(u), ConversationID: c.ConversationID,
			ApprovalRequestID: c.ApprovalRequestID})
		if a.Error != "" {
			out.Errors = append(out.Errors, fmt.Sprintf("%s hook: %s", scope.hook, a.Error))
			s.log.WarnContext(ctx, "a decision hook failed, so the call asks", "hook", scope.hook, "server_id", c.Server,
				"tool_name", c.Tool, "approval_request_id", c.ApprovalRequestID, "error", a.Error)
		}
		if a.Decision == hooks.Approve || a.Decision == hooks.Deny {
			out.Decision, out.Hook, out.Reason = a.Decision, scope.hook, a.Reason
			break
		}
	}
	if out.Decision != hooks.Approve {
		return out, nil
	}
	res, err := policy.ResolveTool(ctx, r, u.ID, c.Server, c.Tool)
	if err != nil {
		return out, err
	}
	set, err := r.Settings.Get(ctx)
	if err != nil {
		return out, err
	}
	switch { // the same clamp as DecideByRules
	case res.Policy == policy.Blocked:
		out.Decision, out.Clamped = hooks.Deny, true
	case res.AskLock != "", set.AskEverything:
		out.Decision, out.Clamped = hooks.Ask, true
	}
	return out, nil
}

// endpoint is where and how h is asked.
func endpoint(h policy.DecisionHook) hooks.Endpoint {
	return hooks.Endpoint{URL: h.URL, Secret: h.Secret, Timeout: time.Duration(h.TimeoutMS) * time.Millisecond}
}

// hookSnapshot is the hook as the audit log keeps it: never the secret, the
// URL's query values masked.
func hookSnapshot(h policy.DecisionHook, rotated bool) map[string]any {
	m := map[string]any{"url": policy.MaskURL(h.URL), "timeout_ms": h.TimeoutMS, "enabled": h.Enabled}
	if rotated {
		m["secret_rotated"] = true
	}
	return m
}
