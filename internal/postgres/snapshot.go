package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/toolgate/toolgate/internal/policy"
)

// The policy read of a turn (issue 15): one statement per turn, and one
// round trip for the workspace's part when this replica's copy is older
// than policy_version (00024_policy_version.sql).

// PolicyChannel is the notification channel on which every change bumping
// policy_version says the new version (only to warm the replicas' copies:
// turns check the version themselves).
const PolicyChannel = "toolgate_policy"

// PolicyVersion returns policy_version and userID's personal policies in
// one statement, each never granted for another definition with the
// tool's definition now.
func (s *Store) PolicyVersion(ctx context.Context, userID string) (int64, []policy.UserPolicy, error) {
	rd, err := readPolicies(ctx, s.pool, userID)
	return rd.Version, rd.Mine, err
}

// readPolicies is PolicyVersion on q (a transaction's connection).
func readPolicies(ctx context.Context, q querier, userID string) (policy.Read, error) {
	var raw []byte
	if err := q.QueryRow(ctx, `SELECT `+policyRead("$1"), userID).Scan(&raw); err != nil {
		return policy.Read{}, translate(err, "read the policy version")
	}
	return decodePolicyRead(raw, userID)
}

// policyRead is an expression (a scalar subquery) that is PolicyVersion's
// read for the user in parameter user, as one JSON object: the version
// (v) and the personal policies (m), each with the tool's definition now
// (d) where it is a never granted for another digest. decodePolicyRead
// reads it. OpenTurn folds it into the statement that opens a turn.
func policyRead(user string) string {
	return `(SELECT json_build_object('v', (SELECT version FROM policy_version), 'm', coalesce(json_agg(json_build_object(
			's', up.server_label, 't', up.tool_name, 'p', up.policy, 'gd', coalesce(up.granted_digest, ''), 'g', up.granted_definition,
			'd', CASE WHEN t.name IS NOT NULL THEN json_build_object('title', t.title, 'description', t.description,
				'input_schema', t.input_schema, 'annotations', t.annotations) END)
			ORDER BY up.server_label, up.tool_name) FILTER (WHERE up.user_id IS NOT NULL), '[]'))
		FROM (SELECT 1) one
		LEFT JOIN user_tool_policies up ON up.user_id = ` + user + `
		LEFT JOIN mcp_tools t ON up.policy = 'never' AND t.server_label = up.server_label AND t.name = up.tool_name
		     AND t.digest IS DISTINCT FROM up.granted_digest)`
}

// decodePolicyRead decodes policyRead's JSON.
func decodePolicyRead(raw []byte, userID string) (policy.Read, error) {
	var v struct {
		V int64 `json:"v"`
		M []struct {
			S  string             `json:"s"`
			T  string             `json:"t"`
			P  policy.Policy      `json:"p"`
			GD string             `json:"gd"`
			G  *policy.Definition `json:"g"`
			D  *policy.Definition `json:"d"`
		} `json:"m"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return policy.Read{}, translate(err, "decode the personal policies")
	}
	rd := policy.Read{Version: v.V}
	if len(v.M) > 0 {
		rd.Mine = make([]policy.UserPolicy, len(v.M))
	}
	for i, m := range v.M {
		rd.Mine[i] = policy.UserPolicy{UserID: userID, ServerLabel: m.S, ToolName: m.T, Policy: m.P,
			GrantedDigest: m.GD, GrantedDefinition: m.G, ToolDefinition: m.D}
	}
	return rd, nil
}

// ToolSnapshot reads the workspace's part of requests in one round trip: a
// read-only repeatable-read transaction sent as one batch, so the version
// and everything read with it are one consistent view.
func (s *Store) ToolSnapshot(ctx context.Context) (policy.ToolSnapshot, error) {
	var snap policy.ToolSnapshot
	b := &pgx.Batch{}
	b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	// Sorting the tools by server in memory, not on disk (about 12 MB at
	// 100,000 tools).
	b.Queue(`SET LOCAL work_mem = '64MB'`)
	var most int // tools and policies: at most this many rows, read in one allocation
	queueSnapshotSettings(b, &snap, &most)
	index := map[string]int{}
	queueSnapshotServers(b, &snap, index)
	queueSnapshotTools(b, &snap, index, &most)
	queueSnapshotRules(b, &snap)
	b.Queue(`COMMIT`)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return policy.ToolSnapshot{}, translate(err, "read the tool policies")
	}
	return snap, nil
}

// queueSnapshotSettings queues the read of the version and the settings
// into snap, and of how many tools and policies there are into most.
func queueSnapshotSettings(b *pgx.Batch, snap *policy.ToolSnapshot, most *int) {
	b.Queue(`SELECT v.version, s.default_policy, s.default_policy_locked, s.ask_everything, s.updated_at,
			(SELECT count(*) FROM mcp_tools) + (SELECT count(*) FROM tool_policies)
		FROM policy_version v, settings s`).QueryRow(func(row pgx.Row) error {
		st := &snap.Settings
		return row.Scan(&snap.Version, &st.DefaultPolicy, &st.DefaultPolicyLocked, &st.AskEverything, &st.UpdatedAt, most)
	})
}

// queueSnapshotServers queues the read of the enabled servers into snap,
// each one's place in snap.Servers into index.
func queueSnapshotServers(b *pgx.Batch, snap *policy.ToolSnapshot, index map[string]int) {
	b.Queue(`SELECT label, url, description, headers_enc, default_policy, default_policy_locked, first_discovered_at,
			health_status, health_since, coalesce(health_error, ''), approval_ttl_seconds, read_only_hints, url_enc
		FROM mcp_servers WHERE enabled ORDER BY label`).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			srv := policy.Server{Enabled: true}
			var sealed, urlSealed []byte
			if err := rows.Scan(&srv.Label, &srv.URL, &srv.Description, &sealed, &srv.DefaultPolicy, &srv.DefaultPolicyLocked,
				&srv.FirstDiscoveredAt, &srv.Health.Status, &srv.Health.Since, &srv.Health.LastError, &srv.ApprovalTTLSeconds,
				&srv.ReadOnlyHints, &urlSealed); err != nil {
				return err
			}
			var err error
			if srv.Headers, err = openHeaders(box(), srv.Label, sealed); err != nil {
				return err
			}
			if srv.URL, err = openURL(box(), srv.Label, srv.URL, urlSealed); err != nil {
				return err
			}
			index[srv.Label] = len(snap.Servers)
			snap.Servers = append(snap.Servers, policy.SnapshotServer{Server: srv})
		}
		return rows.Err()
	})
}

// queueSnapshotTools queues the read of the enabled servers' tools and
// policies into snap's servers (found by index), most rows at most.
//
// Only what Resolve reads; a definition only where a never was granted
// for another one (to say what changed). Rows come by server, in no order
// within one: grouping sorts.
func queueSnapshotTools(b *pgx.Batch, snap *policy.ToolSnapshot, index map[string]int, most *int) {
	b.Queue(`
		SELECT coalesce(t.server_label, p.server_label), coalesce(t.name, p.tool_name), t.name IS NOT NULL, coalesce(t.digest, ''),
		       CASE jsonb_typeof(t.annotations -> 'readOnlyHint') WHEN 'boolean' THEN (t.annotations -> 'readOnlyHint')::boolean END,
		       t.first_seen_at, t.definition_changed_at, p.policy, coalesce(p.locked, false), coalesce(p.granted_digest, ''),
		       CASE WHEN changed THEN p.granted_definition END,
		       CASE WHEN changed THEN t.title END, CASE WHEN changed THEN t.description END,
		       CASE WHEN changed THEN t.input_schema END, CASE WHEN changed THEN t.annotations END
		FROM mcp_tools t
		FULL JOIN tool_policies p ON p.server_label = t.server_label AND p.tool_name = t.name
		CROSS JOIN LATERAL (SELECT p.policy = 'never' AND t.digest IS DISTINCT FROM p.granted_digest AND t.name IS NOT NULL AS changed) c
		WHERE coalesce(t.server_label, p.server_label) IN (SELECT label FROM mcp_servers WHERE enabled)
		ORDER BY coalesce(t.server_label, p.server_label) COLLATE "C"`).Query(func(rows pgx.Rows) error {
		return readSnapshotTools(rows, snap, index, *most)
	})
}

// snapshotToolRow is one row of the tools' read. Its variables are
// scanned into row after row: each variable passed to Scan lives on the
// heap, so one per row would cost.
type snapshotToolRow struct {
	label           pgtype.DriverBytes // only valid until the next row: compared, not kept
	t               policy.Tool
	readOnly        *bool
	pol             pgtype.Text
	title, desc     *string
	schema, ann     []byte
	first, changed  pgtype.Timestamptz
	name, digest    string
	granted         string
	discovered, lck bool
	grantedDef      *policy.Definition
}

// readSnapshotTools reads the tools' rows into snap's servers.
func readSnapshotTools(rows pgx.Rows, snap *policy.ToolSnapshot, index map[string]int, most int) error {
	all := make([]policy.Tool, 0, most)
	times := make([]pgtype.Timestamptz, 0, 2*most) // the tools' times point into it
	pols := [...]policy.Policy{policy.Never, policy.Always, policy.Blocked}
	cur, start := -1, 0
	flush := func() {
		if cur >= 0 {
			snap.Servers[cur].Tools = all[start:len(all):len(all)]
		}
		start = len(all)
	}
	var r snapshotToolRow
	dest := []any{&r.label, &r.name, &r.discovered, &r.digest, &r.readOnly, &r.first, &r.changed, &r.pol,
		&r.lck, &r.granted, &r.grantedDef, &r.title, &r.desc, &r.schema, &r.ann}
	for rows.Next() {
		r.readOnly, r.title, r.desc, r.schema, r.ann, r.grantedDef = nil, nil, nil, nil, nil, nil
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		r.t = policy.Tool{DiscoveredTool: policy.DiscoveredTool{Name: r.name}, Discovered: r.discovered, Digest: r.digest,
			PolicyLocked: r.lck, GrantedDigest: r.granted, GrantedDefinition: r.grantedDef}
		times = append(times, r.first, r.changed)
		first, changed := &times[len(times)-2], &times[len(times)-1]
		if cur < 0 || snap.Servers[cur].Server.Label != string(r.label) {
			i, ok := index[string(r.label)]
			if !ok {
				continue // cannot happen in one consistent view
			}
			flush()
			cur = i
		}
		r.t.ServerLabel = snap.Servers[cur].Server.Label
		if err := r.fill(first, changed, &pols); err != nil {
			return err
		}
		all = append(all, r.t)
	}
	flush()
	return rows.Err()
}

// fill sets on r.t what its row says beyond the name: the read-only hint,
// the times (first and changed point into the shared times), the workspace
// policy (one of pols where it is one) and the definition, if read.
func (r *snapshotToolRow) fill(first, changed *pgtype.Timestamptz, pols *[3]policy.Policy) error {
	t := &r.t
	t.Annotations.ReadOnlyHint = r.readOnly
	if first.Valid {
		t.FirstSeenAt = &first.Time
	}
	if changed.Valid {
		t.ChangedAt = &changed.Time
	}
	if r.pol.Valid {
		for i := range pols {
			if string(pols[i]) == r.pol.String {
				t.Policy = &pols[i] // shared: nothing writes through a tool's policy
			}
		}
		if t.Policy == nil {
			p := policy.Policy(r.pol.String)
			t.Policy = &p
		}
	}
	if r.title != nil {
		t.Title, t.Description, t.InputSchema = *r.title, *r.desc, r.schema
		if err := json.Unmarshal(r.ann, &t.Annotations); err != nil {
			return err
		}
	}
	return nil
}

// queueSnapshotRules queues the read of the rule lists that hold rules
// into snap.
func queueSnapshotRules(b *pgx.Batch, snap *policy.ToolSnapshot) {
	b.Queue(`SELECT coalesce(server_label, ''), coalesce(tool_name, '') FROM approval_rules WHERE jsonb_array_length(rules) > 0`).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var l policy.RuleList
				if err := rows.Scan(&l.ServerLabel, &l.ToolName); err != nil {
					return err
				}
				snap.Rules = append(snap.Rules, l)
			}
			return rows.Err()
		})
}
