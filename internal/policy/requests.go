package policy

import (
	"context"
	"log/slog"
	"slices"
)

// Requests is the part of the policy API a turn reads: the tools of a
// request grouped by server, and one tool's policy, from this replica's
// copy of the ToolSnapshot at the database's policy version.
type Requests struct {
	store Store
	log   *slog.Logger
	tools toolCache // the workspace's part of requests, at a version (snapshot.go)
}

// NewRequests returns the requests part over store.
func NewRequests(store Store, log *slog.Logger) *Requests {
	return &Requests{store: store, log: log}
}

// RequestTools groups the tools of every enabled server for one request of
// the user userID (their personal policies apply). grants maps a server
// label to the tools allowed without asking in the conversation the request
// belongs to (its live grants: none expired or revoked). Servers that offer nothing are left out, and so are
// unreachable ones, which are returned as skipped (with their health) unless
// keep names them: a request that answers approval requests must offer the
// servers it answers for, whatever their health.
//
// It reads one statement (policy_version and the user's personal
// policies): the workspace's part comes from this replica's copy when that
// is at the current version, else from one read of the ToolSnapshot. A
// server without personal policies or grants is the copy's grouping as it
// is; only the others are grouped again. The servers' Health carries its
// status, since and error only.
func (s *Requests) RequestTools(ctx context.Context, userID string, grants map[string]map[string]GrantRef, keep map[string]bool) ([]ServerTools, []SkippedServer, error) {
	version, mine, err := s.store.PolicyVersion(ctx, userID)
	if err != nil {
		return nil, nil, err
	}
	return s.RequestToolsAt(ctx, Read{Version: version, Mine: mine}, grants, keep)
}

// Read is what a turn reads of the policies in the database, in one
// statement (Store.PolicyVersion, or folded into the statement that opens
// the turn): policy_version and the user's personal policies. The rest
// comes from this replica's copy at that version or later.
type Read struct {
	Version int64
	Mine    []UserPolicy
}

// RequestToolsAt is RequestTools from rd, read earlier (in the
// transaction that opened the turn) instead of now.
func (s *Requests) RequestToolsAt(ctx context.Context, rd Read, grants map[string]map[string]GrantRef, keep map[string]bool) ([]ServerTools, []SkippedServer, error) {
	snap, err := s.tools.at(ctx, rd.Version, s.store.ToolSnapshot)
	if err != nil {
		return nil, nil, err
	}
	groups, skipped := snap.request(rd.Mine, grants, keep)
	return groups, skipped, nil
}

// EffectiveAt is Effective from rd (read in the caller's transaction) and
// this replica's copy at rd's version or later, instead of four reads: a
// server that is gone or disabled blocks its tools.
func (s *Requests) EffectiveAt(ctx context.Context, rd Read, label, tool string) (Policy, Source, error) {
	res, err := s.ResolveAt(ctx, rd, label, tool)
	return res.Policy, res.Source, err
}

// ResolveAt is EffectiveAt with the whole resolution (an admin's lock at
// Ask among it).
func (s *Requests) ResolveAt(ctx context.Context, rd Read, label, tool string) (Resolution, error) {
	snap, err := s.tools.at(ctx, rd.Version, s.store.ToolSnapshot)
	if err != nil {
		return Resolution{}, err
	}
	i := slices.IndexFunc(snap.Servers, func(srv SnapshotServer) bool { return srv.Server.Label == label })
	if i < 0 {
		// Not among the enabled servers: gone (Effective's FromServer) or
		// disabled; either blocks.
		return Resolution{Policy: Blocked, Source: FromServer}, nil
	}
	srv := snap.Servers[i]
	var mine []UserPolicy
	for _, up := range rd.Mine {
		if up.ServerLabel == label && up.ToolName == tool {
			mine = append(mine, up)
		}
	}
	t := Tool{DiscoveredTool: DiscoveredTool{Name: tool}, ServerLabel: label}
	if j := slices.IndexFunc(srv.Tools, func(k Tool) bool { return k.Name == tool }); j >= 0 {
		t = srv.Tools[j]
	}
	if ts := withUserPolicies(label, []Tool{t}, mine); len(ts) > 0 {
		t = ts[0]
	}
	return Resolve(resolveInput(srv.Server, snap.Settings, t)), nil
}

// request builds a request's groups from s: mine are the user's personal
// policies (any server), the rest as for RequestTools. Linear in the
// servers, plus the tools of the servers mine or grants name.
func (s *snapshot) request(mine []UserPolicy, grants map[string]map[string]GrantRef, keep map[string]bool) ([]ServerTools, []SkippedServer) {
	var byServer map[string][]UserPolicy
	if len(mine) > 0 {
		byServer = map[string][]UserPolicy{}
		for _, up := range mine {
			byServer[up.ServerLabel] = append(byServer[up.ServerLabel], up)
		}
	}
	out := make([]ServerTools, 0, len(s.Servers))
	var skipped []SkippedServer
	for i := range s.Servers {
		label := s.Servers[i].Server.Label
		g := s.base[i]
		if m, a := byServer[label], grants[label]; len(m) > 0 || len(a) > 0 {
			g = s.group(i, m, a)
		}
		switch {
		case !g.Offered():
		case g.Server.Health.Status.LeftOut() && !keep[label]:
			skipped = append(skipped, SkippedServer{Label: label, Health: g.Server.Health, Tools: g})
		default:
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		out = nil
	}
	return out, skipped
}

// WarmTools loads this replica's copy of the ToolSnapshot when it is older
// than version (a change another replica, or this one, committed): the
// next turn then finds it ready. Called on the policy notification.
func (s *Requests) WarmTools(ctx context.Context, version int64) {
	if s.tools.version() >= version {
		return
	}
	if _, err := s.tools.at(ctx, version, s.store.ToolSnapshot); err != nil {
		s.log.WarnContext(ctx, "warming the tool policies after a change failed; the next turn reads them", "error", err)
	}
}

// ruledTools says which tools of a server rules apply to: all of them
// (workspace or server rules), or those with rules of their own.
func ruledTools(lists []RuleList, label string) (all bool, tools map[string]bool) {
	for _, l := range lists {
		switch {
		case l.ServerLabel == "":
			all = true
		case l.ServerLabel != label:
		case l.ToolName == "":
			all = true
		default:
			if tools == nil {
				tools = map[string]bool{}
			}
			tools[l.ToolName] = true
		}
	}
	return all, tools
}
