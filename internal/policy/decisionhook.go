package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/hooks"
)

// Audit actions of decision hooks.
const (
	ActionDecisionHookSet    = "decision_hook.set"
	ActionDecisionHookDelete = "decision_hook.delete"
)

// DecisionHook is an HTTP endpoint asked before an approval request shows
// its card: a server's (ServerLabel set) or the workspace's.
type DecisionHook struct {
	ServerLabel string
	URL         string
	// Secret signs the requests; Toolgate generates it and shows it once.
	Secret string
	// SecretUnreadable: the stored secret does not open with this
	// SECRETS_KEY (it was stored under another); the hook asks until a
	// new secret is saved.
	SecretUnreadable bool
	TimeoutMS        int
	Enabled          bool
	UpdatedAt        time.Time
	UpdatedBy        string
}

func (h DecisionHook) endpoint() hooks.Endpoint {
	return hooks.Endpoint{URL: h.URL, Secret: h.Secret, Timeout: time.Duration(h.TimeoutMS) * time.Millisecond}
}

// snapshot is the hook as the audit log keeps it: never the secret, the
// URL's query values masked.
func (h DecisionHook) snapshot(rotated bool) map[string]any {
	m := map[string]any{"url": MaskURL(h.URL), "timeout_ms": h.TimeoutMS, "enabled": h.Enabled}
	if rotated {
		m["secret_rotated"] = true
	}
	return m
}

// DecisionHookInput is what PUT sets. TimeoutMS nil keeps the stored value
// (3000 for a new hook), Enabled nil keeps it (true for a new hook).
type DecisionHookInput struct {
	URL          string
	TimeoutMS    *int
	Enabled      *bool
	RotateSecret bool
}

// Validate checks the input on its own (the URL policy is checked apart).
func (in DecisionHookInput) Validate() error {
	f := apperr.Fields{}
	u, err := url.Parse(in.URL)
	switch {
	case in.URL == "":
		f.Add("url", "url is required: the hook's endpoint, e.g. https://hooks.example.com/toolgate")
	case len(in.URL) > MaxURLLen:
		f.Add("url", "url must be at most %d characters", MaxURLLen)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "":
		f.Add("url", "url must be an absolute https URL, e.g. https://hooks.example.com/toolgate (got %q)", in.URL)
	case u.User != nil:
		f.Add("url", "url must not carry credentials: requests are signed with the hook's secret instead")
	}
	if in.TimeoutMS != nil {
		lo, hi := int(hooks.MinTimeout/time.Millisecond), int(hooks.MaxTimeout/time.Millisecond)
		if *in.TimeoutMS < lo || *in.TimeoutMS > hi {
			f.Add("timeout_ms", "timeout_ms must be between %d and %d (milliseconds); the default is %d", lo, hi, hooks.DefaultTimeout.Milliseconds())
		}
	}
	return f.Err("invalid_decision_hook", "the decision hook is not valid")
}

// internalHosts is the part of the URL policy that tells whether a host is
// on the operator's own network (netguard.Guard implements it): plain http
// is only allowed there, since a hook's request carries the call's
// arguments.
type internalHosts interface {
	Internal(ctx context.Context, host string) bool
}

func (s *Service) hooks() *hooks.Client {
	if s.hookClient == nil {
		return defaultHookClient
	}
	return s.hookClient
}

var defaultHookClient = hooks.NewClient(nil)

func (s *Service) checkHookURL(ctx context.Context, raw string) error {
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
func hookScope(ctx context.Context, r Repo, label string, lock bool) error {
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
func (s *Service) DecisionHook(ctx context.Context, label string) (DecisionHook, error) {
	if _, err := requireAdmin(ctx, "decision hooks"); err != nil {
		return DecisionHook{}, err
	}
	h, err := s.loadHook(ctx, label)
	h.Secret = ""
	return h, err
}

func (s *Service) loadHook(ctx context.Context, label string) (DecisionHook, error) {
	r := s.store.Repo()
	if err := hookScope(ctx, r, label, false); err != nil {
		return DecisionHook{}, err
	}
	h, ok, err := r.Hooks.Get(ctx, label)
	if err != nil {
		return DecisionHook{}, err
	}
	if !ok {
		return DecisionHook{}, errHookNotSet(label)
	}
	return h, nil
}

// SetDecisionHook creates or replaces a hook, admins only, audited. A new
// hook, or RotateSecret, gets a fresh secret, returned once as secret ("":
// the stored one is kept).
func (s *Service) SetDecisionHook(ctx context.Context, label string, in DecisionHookInput) (_ DecisionHook, secret string, _ error) {
	u, err := requireAdmin(ctx, "decision hooks")
	if err != nil {
		return DecisionHook{}, "", err
	}
	if err := in.Validate(); err != nil {
		return DecisionHook{}, "", err
	}
	if err := s.checkHookURL(ctx, in.URL); err != nil {
		return DecisionHook{}, "", err
	}
	var out DecisionHook
	err = s.store.Tx(ctx, func(r Repo) error {
		if err := hookScope(ctx, r, label, true); err != nil {
			return err
		}
		old, had, err := r.Hooks.Get(ctx, label)
		if err != nil {
			return err
		}
		h := DecisionHook{ServerLabel: label, URL: in.URL, TimeoutMS: int(hooks.DefaultTimeout.Milliseconds()), Enabled: true, UpdatedBy: u.Email}
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
			before = old.snapshot(false)
		}
		return s.insertAudit(ctx, r, u, ActionDecisionHookSet, hookServer(label), nil, before, h.snapshot(rotated && had))
	})
	if err != nil {
		return DecisionHook{}, "", err
	}
	out.Secret = ""
	return out, secret, nil
}

// DeleteDecisionHook removes a hook, admins only, audited.
func (s *Service) DeleteDecisionHook(ctx context.Context, label string) error {
	u, err := requireAdmin(ctx, "decision hooks")
	if err != nil {
		return err
	}
	return s.store.Tx(ctx, func(r Repo) error {
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
		return s.insertAudit(ctx, r, u, ActionDecisionHookDelete, hookServer(label), nil, old.snapshot(false), nil)
	})
}

// TestDecisionHook sends the hook a sample request (test: true, made by
// the caller) and returns what it answered. Nothing is decided or stored.
func (s *Service) TestDecisionHook(ctx context.Context, label string) (hooks.Answer, error) {
	u, err := requireAdmin(ctx, "decision hooks")
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
	return s.hooks().Ask(ctx, h.endpoint(), req), nil
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

// HookCall is one approval request put to the decision hooks.
type HookCall struct {
	Server, Tool string
	// Arguments are redacted as on the card (see docs/rules-and-hooks.md: the hook sees
	// what the person deciding would see).
	Arguments         json.RawMessage
	Redacted          []string
	ConversationID    string
	ApprovalRequestID string
}

// HookDecision is what the decision hooks decided for one call.
type HookDecision struct {
	Decision hooks.Decision `json:"decision"`
	// Hook is which hook decided ("server", "workspace"); "" when none
	// approved or denied.
	Hook   string `json:"hook,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Errors say why a hook asked was taken as ask (timeout, error
	// status, bad answer), one per hook, prefixed with which.
	Errors []string `json:"errors,omitempty"`
	// Asked is how many hooks were asked (0: none is set and enabled).
	Asked int `json:"asked"`
	// Clamped says a hook approved but the tool's policy does not let a
	// hook loosen it: deny for a blocked tool, ask for a locked always.
	Clamped bool `json:"clamped,omitempty"`
}

// DecideByHooks asks the server's decision hook, then, unless it approved
// or denied, the workspace's, about a call made for u. A hook that is not
// set or not enabled is skipped; one that fails asks. Like argument rules,
// a hook never loosens an admin's decision: for a blocked tool an approval
// becomes deny, for a locked always (or while "ask for everything" is on)
// it becomes ask. An error is returned
// only when the hooks' settings could not be read.
func (s *Service) DecideByHooks(ctx context.Context, u auth.User, c HookCall) (HookDecision, error) {
	out := HookDecision{Decision: hooks.Ask}
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
		a := s.hooks().Ask(ctx, h.endpoint(), hooks.Request{Hook: scope.hook, Server: c.Server, Tool: c.Tool,
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
	res, err := ResolveTool(ctx, r, u.ID, c.Server, c.Tool)
	if err != nil {
		return out, err
	}
	set, err := r.Settings.Get(ctx)
	if err != nil {
		return out, err
	}
	switch { // the same clamp as DecideByRules
	case res.Policy == Blocked:
		out.Decision, out.Clamped = hooks.Deny, true
	case res.AskLock != "", set.AskEverything:
		out.Decision, out.Clamped = hooks.Ask, true
	}
	return out, nil
}
