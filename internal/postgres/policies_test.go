package postgres_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/testdb"
)

// newPolicyRepo is a policy repository with two users (owner, other) and a
// server "crm" on a database of its own.
func newPolicyRepo(t *testing.T) policy.Repo {
	t.Helper()
	pool := testdb.New(t)
	if _, err := pool.Exec(t.Context(), `INSERT INTO users (id, email, role) VALUES
		($1, 'owner@example.com', 'member'), ($2, 'other@example.com', 'admin')`, owner, other); err != nil {
		t.Fatal(err)
	}
	r := postgres.NewStore(pool).Repo()
	if _, err := r.Servers.Insert(t.Context(), policy.Server{Label: "crm", URL: "https://crm.example/mcp",
		Headers: map[string]string{}, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPolicyStore_PersonalPoliciesArePerUserAndApart(t *testing.T) {
	r := newPolicyRepo(t)
	ctx := t.Context()
	def := policy.Definition{Title: "Delete", Description: "deletes", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: policy.Annotations{DestructiveHint: ptr(true)}}
	mine := policy.UserPolicy{UserID: owner, ServerLabel: "crm", ToolName: "del/ete %x", Policy: policy.Never,
		GrantedDigest: "sha256:abc", GrantedDefinition: &def}
	if err := r.Policies.UpsertUser(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if err := r.Policies.UpsertUser(ctx, policy.UserPolicy{UserID: other, ServerLabel: "crm", ToolName: "del/ete %x", Policy: policy.Blocked}); err != nil {
		t.Fatal(err)
	}
	got, err := r.Policies.OfUser(ctx, owner, "crm")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]policy.UserPolicy{mine}, got, cmpopts.IgnoreFields(policy.UserPolicy{}, "UpdatedAt"), sameJSON); diff != "" {
		t.Errorf("owner's policies (-want +got):\n%s", diff)
	}
	// The workspace layer is untouched by personal policies.
	if ws, err := r.Policies.List(ctx, "crm"); err != nil || len(ws) != 0 {
		t.Errorf("workspace policies = %+v, %v; want none", ws, err)
	}
	// Setting again replaces (and clears the grant of a policy that is not never).
	if err := r.Policies.UpsertUser(ctx, policy.UserPolicy{UserID: owner, ServerLabel: "crm", ToolName: "del/ete %x", Policy: policy.Always}); err != nil {
		t.Fatal(err)
	}
	got, _ = r.Policies.OfUser(ctx, owner, "crm")
	if len(got) != 1 || got[0].Policy != policy.Always || got[0].GrantedDigest != "" || got[0].GrantedDefinition != nil {
		t.Errorf("after the change: %+v", got)
	}
	old, err := r.Policies.DeleteUser(ctx, owner, "crm", "del/ete %x")
	if err != nil || old == nil || old.Policy != policy.Always {
		t.Errorf("DeleteUserPolicy = %+v, %v", old, err)
	}
	if again, err := r.Policies.DeleteUser(ctx, owner, "crm", "del/ete %x"); again != nil || err != nil {
		t.Errorf("second DeleteUserPolicy = %+v, %v; want nil, nil", again, err)
	}
	if theirs, _ := r.Policies.OfUser(ctx, other, "crm"); len(theirs) != 1 || theirs[0].Policy != policy.Blocked {
		t.Errorf("the other user's policy changed: %+v", theirs)
	}
	// A personal policy for a server that is gone is NotFound.
	wantNotFound(t, "UpsertUserPolicy on a missing server",
		r.Policies.UpsertUser(ctx, policy.UserPolicy{UserID: owner, ServerLabel: "gone", ToolName: "x", Policy: policy.Never}), "server_not_found")
}

func TestPolicyStore_WorkspacePolicyKeepsLockAndGrant(t *testing.T) {
	r := newPolicyRepo(t)
	ctx := t.Context()
	def := policy.Definition{Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}
	id := other
	p := policy.ToolPolicy{ServerLabel: "crm", ToolName: "search", Policy: policy.Never, Locked: true,
		UpdatedBy: "other@example.com", UpdatedByID: &id, GrantedDigest: "sha256:1", GrantedDefinition: &def}
	if err := r.Policies.Upsert(ctx, p); err != nil {
		t.Fatal(err)
	}
	got, err := r.Policies.List(ctx, "crm")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]policy.ToolPolicy{p}, got, cmpopts.IgnoreFields(policy.ToolPolicy{}, "UpdatedAt"), sameJSON); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	tools, err := r.Tools.List(ctx, "crm")
	if err != nil || len(tools) != 1 {
		t.Fatalf("Tools = %+v, %v", tools, err)
	}
	if tl := tools[0]; !tl.PolicyLocked || tl.GrantedDigest != "sha256:1" || tl.GrantedDefinition == nil || tl.GrantedDefinition.Description != "d" {
		t.Errorf("tool = %+v", tl)
	}
}

func TestPolicyStore_FirstDiscoveryIsRecordedOnce(t *testing.T) {
	r := newPolicyRepo(t)
	ctx := t.Context()
	first := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for _, at := range []time.Time{first, first.Add(time.Hour)} {
		if err := r.Servers.MarkDiscovered(ctx, "crm", at); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := r.Servers.Get(ctx, "crm", false)
	if err != nil {
		t.Fatal(err)
	}
	if srv.FirstDiscoveredAt == nil || !srv.FirstDiscoveredAt.Equal(first) {
		t.Errorf("first_discovered_at = %v, want %v", srv.FirstDiscoveredAt, first)
	}
}

func TestPolicyStore_SettingsAndServerLocks(t *testing.T) {
	r := newPolicyRepo(t)
	ctx := t.Context()
	set, err := r.Settings.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if set.DefaultPolicy != policy.AskUnlessReadOnly || set.DefaultPolicyLocked {
		t.Errorf("fresh settings = %+v, want ask_unless_read_only, unlocked", set)
	}
	set.DefaultPolicy, set.DefaultPolicyLocked = policy.Always, true
	if set, err = r.Settings.Put(ctx, set); err != nil || set.DefaultPolicy != policy.Always || !set.DefaultPolicyLocked {
		t.Errorf("PutSettings = %+v, %v", set, err)
	}
	srv, _ := r.Servers.Get(ctx, "crm", false)
	srv.DefaultPolicy, srv.DefaultPolicyLocked = ptr(policy.AskUnlessReadOnly), true
	if srv, err = r.Servers.Update(ctx, srv); err != nil || !srv.DefaultPolicyLocked || *srv.DefaultPolicy != policy.AskUnlessReadOnly {
		t.Errorf("UpdateServer = %+v, %v", srv, err)
	}
}

func TestPolicyStore_AuditFiltersByActor(t *testing.T) {
	r := newPolicyRepo(t)
	ctx := t.Context()
	for _, e := range []policy.AuditEntry{
		{Actor: "owner@example.com", ActorID: owner, Action: policy.ActionPolicySet},
		{Actor: "other@example.com", ActorID: other, Action: policy.ActionPolicySet},
		{Actor: "toolgate", ActorID: "system", Action: policy.ActionServerCreate},
	} {
		e.Before, e.After = json.RawMessage("null"), json.RawMessage("null")
		if err := r.Audit.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	mine, err := r.Audit.List(ctx, policy.AuditQuery{Limit: 10, ActorID: owner})
	if err != nil {
		t.Fatal(err)
	}
	if len(mine) != 1 || mine[0].ActorID != owner || mine[0].Actor != "owner@example.com" {
		t.Errorf("owner's entries = %+v", mine)
	}
	all, _ := r.Audit.List(ctx, policy.AuditQuery{Limit: 10})
	if len(all) != 3 {
		t.Errorf("%d entries without a filter, want 3", len(all))
	}
}
