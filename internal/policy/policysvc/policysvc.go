// Package policysvc puts the policy service's parts together: the
// policies, requests and audit of package policy, the servers and their
// health (registry), and the hooks, rules and cards (decide).
package policysvc

import (
	"log/slog"

	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/decide"
	"github.com/toolgate/toolgate/internal/policy/registry"
)

// Service holds the parts of the policy API; a caller names the part it
// calls (svc.Servers.CreateServer, svc.Policies.SetPolicy).
type Service struct {
	Policies *policy.Policies
	Requests *policy.Requests
	Audit    *policy.Audit
	Servers  *registry.Servers
	Health   *registry.Health
	Hooks    *decide.Hooks
	Rules    *decide.Rules
	Cards    *decide.Cards
}

// New returns the policy service over store that discovers tools with d,
// set up by opts.
func New(store policy.Store, d policy.Discoverer, log *slog.Logger, opts policy.Options) *Service {
	policies := policy.NewPolicies(store, opts.URLs)
	requests := policy.NewRequests(store, log)
	servers, health := registry.New(store, d, policies, log, opts)
	hooks, rules, cards := decide.New(store, log, opts)
	return &Service{Policies: policies, Requests: requests, Audit: policy.NewAudit(store, requests),
		Servers: servers, Health: health, Hooks: hooks, Rules: rules, Cards: cards}
}
