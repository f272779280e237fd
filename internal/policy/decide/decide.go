// Package decide keeps what decides an approval request besides the
// policies: decision hooks, argument rules and approval cards.
package decide

import (
	"log/slog"

	"github.com/toolgate/toolgate/internal/hooks"
	"github.com/toolgate/toolgate/internal/policy"
)

// Hooks sets, tests and asks the decision hooks.
type Hooks struct {
	store policy.Store
	urls  policy.URLChecker // nil: no URL policy
	// hookClient asks decision hooks; nil: a default one.
	hookClient *hooks.Client
	log        *slog.Logger
}

// Rules sets, tries and compiles the argument rules.
type Rules struct{ store policy.Store }

// Cards sets the approval cards admins give tools.
type Cards struct{ store policy.Store }

// New returns the hooks, rules and cards over store, set up by opts (its
// URLs and HookClient).
func New(store policy.Store, log *slog.Logger, opts policy.Options) (*Hooks, *Rules, *Cards) {
	return &Hooks{store: store, urls: opts.URLs, hookClient: opts.HookClient, log: log}, &Rules{store: store}, &Cards{store: store}
}
