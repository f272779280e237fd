package postgres_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/testdb"
)

// replicaPolicies returns two policy services (two replicas, each with
// its own copy of the tool policies) on one database with a server "crm"
// whose tools search and update were discovered.
func replicaPolicies(t *testing.T) (a, b *policysvc.Service, pool *pgxpool.Pool) {
	t.Helper()
	pool = testdb.New(t)
	if _, err := pool.Exec(t.Context(), `INSERT INTO users (id, email, role) VALUES
		($1, 'owner@example.com', 'member'), ($2, 'other@example.com', 'admin')`, owner, other); err != nil {
		t.Fatal(err)
	}
	r := postgres.NewStore(pool).Repo()
	if _, err := r.Servers.Insert(t.Context(), policy.Server{Label: "crm", URL: "https://crm.example/mcp",
		Headers: map[string]string{"Authorization": "Bearer x"}, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := r.Tools.Replace(t.Context(), "crm", []policy.DiscoveredTool{{Name: "search"}, {Name: "update"}}, at); err != nil {
		t.Fatal(err)
	}
	if err := r.Servers.MarkDiscovered(t.Context(), "crm", at); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Settings.Put(t.Context(), policy.Settings{DefaultPolicy: policy.Never}); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	return policysvc.New(postgres.NewStore(pool), nil, log, policy.Options{}), policysvc.New(postgres.NewStore(pool), nil, log, policy.Options{}), pool
}

// groupsOf is the policy group of every tool RequestTools offers ("" for
// skipped servers' tools), as "server/tool" -> never|always.
func groupsOf(t *testing.T, s *policysvc.Service, userID string) map[string]string {
	t.Helper()
	groups, skipped, err := s.Requests.RequestTools(t.Context(), userID, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range groups {
		for _, tl := range g.Never {
			out[g.Server.Label+"/"+tl.Name] = "never"
		}
		for _, tl := range g.Always {
			out[g.Server.Label+"/"+tl.Name] = "always"
		}
	}
	for _, sk := range skipped {
		out[sk.Label] = "skipped"
	}
	return out
}

var adminCtx = func(ctx context.Context) context.Context {
	return auth.WithUser(ctx, auth.User{ID: other, Email: "other@example.com", Role: auth.Admin})
}

// A change made through one replica is in force in the very next request
// built on another, with no notification delivered (nothing listens here):
// the other replica sees policy_version moved and reads again.
func TestRequestTools_ChangeOnOneReplicaIsInForceOnTheOtherAtOnce(t *testing.T) {
	a, b, pool := replicaPolicies(t)
	ctx := t.Context()
	if got := groupsOf(t, b, owner); got["crm/update"] != "never" || got["crm/search"] != "never" {
		t.Fatalf("before any change, b offers %v; want both tools never", got)
	}
	blocked, always := policy.Blocked, policy.Always

	// A workspace tool policy.
	if err := a.Policies.SetPolicies(adminCtx(ctx), "crm", policy.LayerWorkspace, map[string]*policy.Policy{"update": &always}); err != nil {
		t.Fatal(err)
	}
	if got := groupsOf(t, b, owner); got["crm/update"] != "always" {
		t.Errorf("after a set update to always, b's next request offers %v", got)
	}
	if err := a.Policies.SetPolicies(adminCtx(ctx), "crm", policy.LayerWorkspace, map[string]*policy.Policy{"update": &blocked}); err != nil {
		t.Fatal(err)
	}
	if got := groupsOf(t, b, owner); got["crm/update"] != "" {
		t.Errorf("after a blocked update, b's next request offers %v", got)
	}

	// The admin's switch.
	on := true
	if _, err := a.Policies.UpdateSettings(adminCtx(ctx), policy.SettingsPatch{AskEverything: &on}); err != nil {
		t.Fatal(err)
	}
	if got := groupsOf(t, b, owner); got["crm/search"] != "always" {
		t.Errorf("with ask everything on, b's next request offers %v", got)
	}

	// A personal policy (read with every turn, never cached).
	off := false
	if _, err := a.Policies.UpdateSettings(adminCtx(ctx), policy.SettingsPatch{AskEverything: &off}); err != nil {
		t.Fatal(err)
	}
	if err := a.Policies.SetPolicies(auth.WithUser(ctx, auth.User{ID: owner, Email: "owner@example.com", Role: auth.Member}),
		"crm", policy.LayerUser, map[string]*policy.Policy{"search": &always}); err != nil {
		t.Fatal(err)
	}
	if got := groupsOf(t, b, owner); got["crm/search"] != "always" {
		t.Errorf("after owner's own always for search, b offers owner %v", got)
	}
	if got := groupsOf(t, b, other); got["crm/search"] != "never" {
		t.Errorf("owner's personal policy leaked to other: %v", got)
	}

	// Health, as another replica's turn records it.
	if err := a.Health.ServerFailed(ctx, "crm", "", "connection refused"); err != nil {
		t.Fatal(err)
	}
	if got := groupsOf(t, b, owner); got["crm"] != "skipped" {
		t.Errorf("after crm was found unreachable, b's next request offers %v", got)
	}

	// A server disabled by a plain statement (any writer bumps the version).
	if _, err := pool.Exec(ctx, `UPDATE mcp_servers SET enabled = false`); err != nil {
		t.Fatal(err)
	}
	if got := groupsOf(t, b, owner); len(got) != 0 {
		t.Errorf("with crm disabled, b's next request offers %v", got)
	}
}

// What bumps policy_version: every change grouping reads, once per
// transaction; not what only the API shows, nor personal policies.
func TestPolicyVersion_BumpedByWhatGroupingReads(t *testing.T) {
	_, _, pool := replicaPolicies(t)
	store := postgres.NewStore(pool)
	ctx := t.Context()
	version := func() int64 {
		v, _, err := store.PolicyVersion(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	steps := []struct {
		what string
		sql  string
		bump bool
	}{
		{"a workspace policy", `INSERT INTO tool_policies (server_label, tool_name, policy, updated_by) VALUES ('crm', 'search', 'always', 'x')`, true},
		{"the settings", `UPDATE settings SET ask_everything = true`, true},
		{"a server's default", `UPDATE mcp_servers SET default_policy = 'always'`, true},
		{"a server's health", `UPDATE mcp_servers SET health_status = 'unreachable', health_since = now(), health_error = 'down'`, true},
		{"a recheck's time only", `UPDATE mcp_servers SET health_checked_at = now(), tools_refreshed_at = now(), updated_at = now()`, false},
		{"a tool's definition", `UPDATE mcp_tools SET digest = 'sha256:new' WHERE name = 'search'`, true},
		{"a tool stored again unchanged", `UPDATE mcp_tools SET title = title`, false},
		{"a personal policy", `INSERT INTO user_tool_policies (user_id, server_label, tool_name, policy) VALUES ('` + owner + `', 'crm', 'search', 'never')`, false},
		{"a rule list", `INSERT INTO approval_rules (scope, server_label, rules, updated_by) VALUES ('server', 'crm', '[]', 'x')`, true},
		{"many tools in one transaction", `UPDATE mcp_tools SET first_seen_at = first_seen_at + interval '1 second'`, true},
		{"a server deleted", `DELETE FROM mcp_servers`, true},
	}
	for _, st := range steps {
		before := version()
		if _, err := pool.Exec(ctx, st.sql); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		after := version()
		switch {
		case st.bump && after != before+1:
			t.Errorf("%s: version %d -> %d, want one bump", st.what, before, after)
		case !st.bump && after != before:
			t.Errorf("%s: version %d -> %d, want unchanged", st.what, before, after)
		}
	}
}

// The snapshot carries only what grouping needs, and definitions only for
// a never granted for another definition.
func TestToolSnapshot_ReadsWhatGroupingNeeds(t *testing.T) {
	_, _, pool := replicaPolicies(t)
	store := postgres.NewStore(pool)
	r := store.Repo()
	ctx := t.Context()
	if err := r.Policies.Upsert(ctx, policy.ToolPolicy{ServerLabel: "crm", ToolName: "update", Policy: policy.Never, UpdatedBy: "x",
		GrantedDigest: "sha256:old", GrantedDefinition: &policy.Definition{Title: "old"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.Policies.Upsert(ctx, policy.ToolPolicy{ServerLabel: "crm", ToolName: "later", Policy: policy.Always, UpdatedBy: "x", Locked: true}); err != nil {
		t.Fatal(err)
	}
	snap, err := store.ToolSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Servers) != 1 || snap.Servers[0].Server.Headers["Authorization"] != "Bearer x" {
		t.Fatalf("servers = %+v", snap.Servers)
	}
	tools := slices.SortedFunc(slices.Values(snap.Servers[0].Tools), func(a, b policy.Tool) int { return strings.Compare(a.Name, b.Name) })
	names := []string{}
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"later", "search", "update"}) {
		t.Fatalf("tools = %v", names)
	}
	if l := tools[0]; l.Discovered || l.Policy == nil || *l.Policy != policy.Always || !l.PolicyLocked {
		t.Errorf("later (policy only) = %+v", l)
	}
	if s := tools[1]; !s.Discovered || s.Digest == "" || s.FirstSeenAt == nil || s.InputSchema != nil || s.Policy != nil {
		t.Errorf("search = %+v; want discovered, digest and times, no schema", s)
	}
	if u := tools[2]; u.GrantedDefinition == nil || u.GrantedDefinition.Title != "old" || u.InputSchema == nil {
		t.Errorf("update (never granted for another definition) = %+v; want both definitions", u)
	}
	if v, _, _ := store.PolicyVersion(ctx, owner); snap.Version != v {
		t.Errorf("snapshot version %d, current %d", snap.Version, v)
	}
}
