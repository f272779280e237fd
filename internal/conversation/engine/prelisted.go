package engine

import (
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/prelist"
	"github.com/toolgate/toolgate/internal/policy"
)

// prelisted lists the servers of groups with tools that would run unasked
// (direct mode, prelist.Listings.Check) and returns the groups the request
// is built from; a changed definition reads the groups again.
func (r *relay) prelisted(p *prelist.Listings, groups []policy.ServerTools, skipped []policy.SkippedServer,
	keep map[string]bool) ([]policy.ServerTools, []policy.SkippedServer, error) {
	t, s := r.t, r.t.s
	reread := func() ([]policy.ServerTools, []policy.SkippedServer, error) {
		again, sk, err := s.policies.Tools.Request(r.store, t.user.ID, t.grants, keep)
		if err != nil {
			return nil, nil, err
		}
		return t.conv.Tools.Apply(again, keep), t.conv.Tools.ApplySkipped(sk), nil
	}
	return p.Check(r.store, groups, skipped, reread, func(label string, err error) { r.notice(conversation.PrelistNotice(label, err)) })
}
