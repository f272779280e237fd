package policy

import (
	"encoding/json"
	"net/url"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
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
