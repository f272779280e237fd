package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/testdb"
)

// seedScale fills a fresh database with servers × tools (definitions of a
// realistic size: a description and a small schema each), a workspace
// policy on every tenth tool, and owner's personal policies on 10 servers.
func seedScale(b *testing.B, servers, tools int) *pgxpool.Pool {
	b.Helper()
	pool := testdb.New(b)
	ctx := b.Context()
	for _, q := range []string{
		`INSERT INTO users (id, email, role) VALUES ('` + owner + `', 'owner@example.com', 'member')`,
		fmt.Sprintf(`INSERT INTO mcp_servers (label, url, first_discovered_at)
			SELECT format('srv-%%s', lpad(i::text, 4, '0')), format('https://mcp%%s.example/mcp', i), '2026-01-01'
			FROM generate_series(0, %d) i`, servers-1),
		fmt.Sprintf(`INSERT INTO mcp_tools (server_label, name, title, description, input_schema, annotations, digest,
				first_seen_at, definition_changed_at)
			SELECT s.label, format('tool_%%s', lpad(j::text, 3, '0')), 'Tool ' || j,
			       repeat('Does one thing to the records of the system. ', 6),
			       '{"type":"object","properties":{"id":{"type":"string","description":"the record"},"limit":{"type":"integer"}},"required":["id"]}',
			       CASE WHEN j %% 3 = 0 THEN '{"readOnlyHint":true}' ELSE '{}' END::jsonb,
			       'sha256:' || md5(s.label || j) || md5(j || s.label), '2026-01-01', '2026-01-01'
			FROM mcp_servers s, generate_series(0, %d) j`, tools-1),
		`INSERT INTO tool_policies (server_label, tool_name, policy, updated_by)
			SELECT server_label, name, 'always', 'bench' FROM mcp_tools WHERE name LIKE '%0'`,
		`INSERT INTO user_tool_policies (user_id, server_label, tool_name, policy)
			SELECT '` + owner + `', label, 'tool_004', 'never' FROM mcp_servers ORDER BY label LIMIT 10`,
		`ANALYZE`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			b.Fatalf("seed: %v\n%s", err, q)
		}
	}
	return pool
}

// requestToolsPerServer is the policy read as it was before issue 15 (the
// baseline): one transaction, and per enabled server its full tool rows
// (schemas, annotations decoded) and the user's personal policies.
func requestToolsPerServer(ctx context.Context, store *postgres.Store, userID string, grants map[string]map[string]policy.GrantRef) ([]policy.ServerTools, error) {
	var out []policy.ServerTools
	err := store.Tx(ctx, func(r policy.Repo) error {
		set, err := r.Settings.Get(ctx)
		if err != nil {
			return err
		}
		servers, err := r.Servers.List(ctx)
		if err != nil {
			return err
		}
		if _, err := r.Rules.Lists(ctx); err != nil {
			return err
		}
		for _, srv := range servers {
			if !srv.Enabled {
				continue
			}
			tools, err := r.Tools.List(ctx, srv.Label)
			if err != nil {
				return err
			}
			mine, err := r.Policies.OfUser(ctx, userID, srv.Label)
			if err != nil {
				return err
			}
			out = append(out, policy.GroupTools(srv, set, tools, mine, grants[srv.Label]))
		}
		return nil
	})
	return out, err
}

// BenchmarkRequestTools_1000x100 is the policy read and grouping of one
// turn at 1,000 servers × 100 tools against real Postgres:
// "baseline_per_server" as before issue 15, "cached" with this replica's
// copy at the current version (one statement: the version and the user's
// personal policies), "reload" when every turn finds the version moved
// (one round trip for the snapshot, then grouping).
func BenchmarkRequestTools_1000x100(b *testing.B) {
	pool := seedScale(b, 1000, 100)
	store := postgres.NewStore(pool)
	ctx := b.Context()
	grants := map[string]map[string]policy.GrantRef{"srv-0011": {"tool_010": {ID: "g", Conversation: true}}}
	check := func(b *testing.B, n int) {
		if n != 1000 {
			b.Fatalf("%d servers offered, want 1000", n)
		}
	}
	b.Run("baseline_per_server", func(b *testing.B) {
		for b.Loop() {
			out, err := requestToolsPerServer(ctx, store, owner, grants)
			if err != nil {
				b.Fatal(err)
			}
			check(b, len(out))
		}
	})
	svc := policysvc.New(store, nil, slog.New(slog.DiscardHandler), policy.Options{})
	if _, _, err := svc.Requests.RequestTools(ctx, owner, grants, nil); err != nil { // loads the copy
		b.Fatal(err)
	}
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, _, err := svc.Requests.RequestTools(ctx, owner, grants, nil)
			if err != nil {
				b.Fatal(err)
			}
			check(b, len(out))
		}
	})
	b.Run("snapshot_read_only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := store.ToolSnapshot(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	if explain := false; explain { // true: logs the plan of the tools statement (with -v)
		rows, _ := pool.Query(ctx, `EXPLAIN ANALYZE SELECT coalesce(t.server_label, p.server_label), coalesce(t.name, p.tool_name), t.name IS NOT NULL, coalesce(t.digest, ''),
		       CASE jsonb_typeof(t.annotations -> 'readOnlyHint') WHEN 'boolean' THEN (t.annotations -> 'readOnlyHint')::boolean END,
		       t.first_seen_at, t.definition_changed_at, p.policy
		FROM mcp_tools t
		FULL JOIN tool_policies p ON p.server_label = t.server_label AND p.tool_name = t.name
		CROSS JOIN LATERAL (SELECT p.policy = 'never' AND t.digest IS DISTINCT FROM p.granted_digest AND t.name IS NOT NULL AS changed) c
		WHERE coalesce(t.server_label, p.server_label) IN (SELECT label FROM mcp_servers WHERE enabled)
		ORDER BY coalesce(t.server_label, p.server_label) COLLATE "C"`)
		for rows.Next() {
			var l string
			_ = rows.Scan(&l)
			b.Log(l)
		}
	}
	b.Run("reload", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			if _, err := pool.Exec(ctx, `UPDATE settings SET updated_at = now()`); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			out, _, err := svc.Requests.RequestTools(ctx, owner, grants, nil)
			if err != nil {
				b.Fatal(err)
			}
			check(b, len(out))
		}
	})
}
