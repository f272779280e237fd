package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/policy"
)

// Store is the Postgres implementation of policy.Store.
type Store struct{ pool *pgxpool.Pool }

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Tx runs fn in one transaction.
func (s *Store) Tx(ctx context.Context, fn func(policy.Repo) error) error {
	return inTx(ctx, s.pool, func(tx pgx.Tx) error { return fn(repo{tx}) })
}

// Repo returns a repository that runs each statement on its own.
func (s *Store) Repo() policy.Repo { return repo{s.pool} }

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error { return translate(s.pool.Ping(ctx), "ping") }

type repo struct{ q querier }

func (r repo) Settings(ctx context.Context) (policy.Settings, error) {
	var s policy.Settings
	err := r.q.QueryRow(ctx, `SELECT default_policy, default_policy_locked, ask_everything, updated_at FROM settings`).
		Scan(&s.DefaultPolicy, &s.DefaultPolicyLocked, &s.AskEverything, &s.UpdatedAt)
	return s, translate(err, "read settings")
}

func (r repo) PutSettings(ctx context.Context, s policy.Settings) (policy.Settings, error) {
	err := r.q.QueryRow(ctx, `UPDATE settings SET default_policy = $1, default_policy_locked = $2, ask_everything = $3, updated_at = now()
		RETURNING default_policy, default_policy_locked, ask_everything, updated_at`, s.DefaultPolicy, s.DefaultPolicyLocked, s.AskEverything).
		Scan(&s.DefaultPolicy, &s.DefaultPolicyLocked, &s.AskEverything, &s.UpdatedAt)
	return s, translate(err, "write settings")
}

const serverCols = `s.label, s.url, s.description, s.headers_enc, s.default_policy, s.enabled, s.created_at,
	s.updated_at, s.tools_refreshed_at, coalesce(s.tools_refresh_error, ''),
	(SELECT count(*) FROM mcp_tools t WHERE t.server_label = s.label), s.default_policy_locked, s.first_discovered_at,
	s.health_status, s.health_since, coalesce(s.health_error, ''), s.health_checked_at, s.health_ok_at, s.approval_ttl_seconds,
	s.read_only_hints, s.health_list_ms, s.health_failures, s.url_enc, NOT s.mask_results`

func scanServer(row pgx.Row) (policy.Server, error) {
	var s policy.Server
	var sealed, urlSealed []byte // headers and the URL, encrypted (see secrets.go)
	err := row.Scan(&s.Label, &s.URL, &s.Description, &sealed, &s.DefaultPolicy, &s.Enabled,
		&s.CreatedAt, &s.UpdatedAt, &s.RefreshedAt, &s.RefreshError, &s.ToolCount, &s.DefaultPolicyLocked, &s.FirstDiscoveredAt,
		&s.Health.Status, &s.Health.Since, &s.Health.LastError, &s.Health.CheckedAt, &s.Health.OKAt, &s.ApprovalTTLSeconds,
		&s.ReadOnlyHints, &s.Health.ListMS, &s.Health.Failures, &urlSealed, &s.UnmaskedResults)
	if err == nil {
		s.Headers, err = openHeaders(box(), s.Label, sealed)
	}
	if err == nil {
		s.URL, err = openURL(box(), s.Label, s.URL, urlSealed)
	}
	return s, err
}

func (r repo) ListServers(ctx context.Context) ([]policy.Server, error) {
	rows, err := r.q.Query(ctx, `SELECT `+serverCols+` FROM mcp_servers s ORDER BY s.label`)
	if err != nil {
		return nil, translate(err, "list servers")
	}
	out := []policy.Server{}
	for rows.Next() {
		s, err := scanServer(rows)
		if err != nil {
			rows.Close()
			return nil, translate(err, "list servers")
		}
		out = append(out, s)
	}
	return out, translate(rows.Err(), "list servers")
}

func (r repo) Server(ctx context.Context, label string, lock bool) (policy.Server, error) {
	q := `SELECT ` + serverCols + ` FROM mcp_servers s WHERE s.label = $1`
	if lock {
		q += ` FOR UPDATE`
	}
	s, err := scanServer(r.q.QueryRow(ctx, q, label))
	err = translate(err, "read server")
	if apperr.KindOf(err) == apperr.NotFound {
		return s, notFound(label)
	}
	return s, err
}

func notFound(label string) error {
	return apperr.NotFoundf("server_not_found", "there is no MCP server with the label %q; GET /api/mcp/servers lists them", label)
}

func (r repo) InsertServer(ctx context.Context, s policy.Server) (policy.Server, error) {
	sealed, err := sealHeaders(box(), s.Label, s.Headers)
	if err != nil {
		return s, err
	}
	shownURL, urlSealed := sealURL(box(), s.Label, s.URL)
	_, err = r.q.Exec(ctx, `INSERT INTO mcp_servers (label, url, description, headers_enc, default_policy, enabled, default_policy_locked,
			approval_ttl_seconds, url_enc, read_only_hints, mask_results)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, coalesce(nullif($10, ''), 'claimed'), NOT $11)`, s.Label, shownURL, s.Description, sealed, s.DefaultPolicy, s.Enabled, s.DefaultPolicyLocked,
		s.ApprovalTTLSeconds, urlSealed, s.ReadOnlyHints, s.UnmaskedResults)
	if err := translate(err, "create server"); err != nil {
		if apperr.KindOf(err) == apperr.Conflict {
			return s, apperr.Wrap(err, apperr.Conflict, "duplicate_label",
				"an MCP server labelled %q already exists (labels are unique regardless of case); choose another label", s.Label)
		}
		return s, err
	}
	return r.Server(ctx, s.Label, false)
}

func (r repo) UpdateServer(ctx context.Context, s policy.Server) (policy.Server, error) {
	sealed, err := sealHeaders(box(), s.Label, s.Headers)
	if err != nil {
		return s, err
	}
	shownURL, urlSealed := sealURL(box(), s.Label, s.URL)
	tag, err := r.q.Exec(ctx, `UPDATE mcp_servers SET url = $2, description = $3, headers_enc = $4,
		default_policy = $5, enabled = $6, default_policy_locked = $7, approval_ttl_seconds = $8, url_enc = $9,
		read_only_hints = coalesce(nullif($10, ''), read_only_hints), mask_results = NOT $11, updated_at = now() WHERE label = $1`,
		s.Label, shownURL, s.Description, sealed, s.DefaultPolicy, s.Enabled, s.DefaultPolicyLocked, s.ApprovalTTLSeconds, urlSealed, s.ReadOnlyHints,
		s.UnmaskedResults)
	if err != nil {
		return s, translate(err, "update server")
	}
	if tag.RowsAffected() == 0 {
		return s, notFound(s.Label)
	}
	return r.Server(ctx, s.Label, false)
}

func (r repo) DeleteServer(ctx context.Context, label string) error {
	tag, err := r.q.Exec(ctx, `DELETE FROM mcp_servers WHERE label = $1`, label)
	if err != nil {
		return translate(err, "delete server")
	}
	if tag.RowsAffected() == 0 {
		return notFound(label)
	}
	return nil
}

func (r repo) SetRefreshResult(ctx context.Context, label string, at time.Time, refreshErr string) error {
	_, err := r.q.Exec(ctx, `UPDATE mcp_servers SET tools_refreshed_at = $2, tools_refresh_error = nullif($3, '')
		WHERE label = $1`, label, at, refreshErr)
	return translate(err, "record tool refresh")
}

func (r repo) MarkDiscovered(ctx context.Context, label string, at time.Time) error {
	_, err := r.q.Exec(ctx, `UPDATE mcp_servers SET first_discovered_at = $2
		WHERE label = $1 AND first_discovered_at IS NULL`, label, at)
	return translate(err, "record first discovery")
}

// Tools joins discovered tools with explicit policies; a full join so that a
// policy for a tool not discovered (yet) shows up too.
func (r repo) Tools(ctx context.Context, label string) ([]policy.Tool, error) {
	rows, err := r.q.Query(ctx, `
		SELECT coalesce(t.name, p.tool_name), t.name IS NOT NULL, coalesce(t.title, ''), coalesce(t.description, ''),
		       t.input_schema, t.annotations, coalesce(t.digest, ''), t.first_seen_at, t.definition_changed_at,
		       p.policy, p.updated_at, p.updated_by, coalesce(p.locked, false), coalesce(p.granted_digest, ''),
		       p.granted_definition
		FROM (SELECT * FROM mcp_tools WHERE server_label = $1) t
		FULL JOIN (SELECT * FROM tool_policies WHERE server_label = $1) p ON p.tool_name = t.name
		ORDER BY 1`, label)
	if err != nil {
		return nil, translate(err, "list tools")
	}
	out := []policy.Tool{}
	for rows.Next() {
		t := policy.Tool{ServerLabel: label}
		var schema, ann []byte
		if err := rows.Scan(&t.Name, &t.Discovered, &t.Title, &t.Description, &schema, &ann, &t.Digest,
			&t.FirstSeenAt, &t.ChangedAt, &t.Policy, &t.PolicyUpdatedAt, &t.PolicyUpdatedBy, &t.PolicyLocked,
			&t.GrantedDigest, &t.GrantedDefinition); err != nil {
			rows.Close()
			return nil, translate(err, "list tools")
		}
		if schema != nil {
			t.InputSchema = schema
		}
		if ann != nil {
			if err := json.Unmarshal(ann, &t.Annotations); err != nil {
				rows.Close()
				return nil, translate(err, "decode tool annotations")
			}
		}
		out = append(out, t)
	}
	return out, translate(rows.Err(), "list tools")
}

func (r repo) ReplaceTools(ctx context.Context, label string, tools []policy.DiscoveredTool, at time.Time) error {
	if err := r.UpsertTools(ctx, label, tools, at); err != nil {
		return err
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	_, err := r.q.Exec(ctx, `DELETE FROM mcp_tools WHERE server_label = $1 AND NOT (name = ANY($2))`, label, names)
	return translate(err, "remove tools the server no longer lists")
}

func (r repo) UpsertTools(ctx context.Context, label string, tools []policy.DiscoveredTool, at time.Time) error {
	for _, t := range tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		_, err := r.q.Exec(ctx, `
			INSERT INTO mcp_tools (server_label, name, title, description, input_schema, annotations, digest,
			                       first_seen_at, definition_changed_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
			ON CONFLICT (server_label, name) DO UPDATE SET
				title = excluded.title, description = excluded.description, input_schema = excluded.input_schema,
				annotations = excluded.annotations, digest = excluded.digest,
				definition_changed_at = CASE WHEN mcp_tools.digest = excluded.digest
					THEN mcp_tools.definition_changed_at ELSE excluded.definition_changed_at END`,
			label, t.Name, t.Title, t.Description, schema, t.Annotations, t.Digest(), at)
		if err != nil {
			return translate(err, "store tool "+t.Name)
		}
	}
	return nil
}

const policyCols = `server_label, tool_name, policy, locked, updated_at, updated_by, updated_by_id,
	coalesce(granted_digest, ''), granted_definition`

func scanPolicy(row pgx.Row) (policy.ToolPolicy, error) {
	var p policy.ToolPolicy
	err := row.Scan(&p.ServerLabel, &p.ToolName, &p.Policy, &p.Locked, &p.UpdatedAt, &p.UpdatedBy, &p.UpdatedByID,
		&p.GrantedDigest, &p.GrantedDefinition)
	return p, err
}

func (r repo) Policies(ctx context.Context, label string) ([]policy.ToolPolicy, error) {
	rows, err := r.q.Query(ctx, `SELECT `+policyCols+` FROM tool_policies WHERE server_label = $1 ORDER BY tool_name`, label)
	if err != nil {
		return nil, translate(err, "list policies")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (policy.ToolPolicy, error) { return scanPolicy(row) })
	if out == nil {
		out = []policy.ToolPolicy{}
	}
	return out, translate(err, "list policies")
}

func (r repo) UpsertPolicy(ctx context.Context, p policy.ToolPolicy) error {
	_, err := r.q.Exec(ctx, `INSERT INTO tool_policies (server_label, tool_name, policy, updated_by, locked,
			updated_by_id, granted_digest, granted_definition)
		VALUES ($1, $2, $3, $4, $5, $6, nullif($7, ''), $8)
		ON CONFLICT (server_label, tool_name) DO UPDATE SET policy = excluded.policy,
			updated_by = excluded.updated_by, locked = excluded.locked, updated_by_id = excluded.updated_by_id,
			granted_digest = excluded.granted_digest, granted_definition = excluded.granted_definition,
			updated_at = now()`,
		p.ServerLabel, p.ToolName, p.Policy, p.UpdatedBy, p.Locked, p.UpdatedByID, p.GrantedDigest, p.GrantedDefinition)
	err = translate(err, "set policy")
	if err != nil && apperr.KindOf(err) == apperr.NotFound { // the server was deleted meanwhile
		return notFound(p.ServerLabel)
	}
	return err
}

func (r repo) DeletePolicy(ctx context.Context, label, tool string) (*policy.ToolPolicy, error) {
	p, err := scanPolicy(r.q.QueryRow(ctx, `DELETE FROM tool_policies WHERE server_label = $1 AND tool_name = $2
		RETURNING `+policyCols, label, tool))
	err = translate(err, "delete policy")
	if apperr.KindOf(err) == apperr.NotFound { // there was none
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

const userPolicyCols = `user_id, server_label, tool_name, policy, updated_at, coalesce(granted_digest, ''), granted_definition`

func scanUserPolicy(row pgx.Row) (policy.UserPolicy, error) {
	var p policy.UserPolicy
	err := row.Scan(&p.UserID, &p.ServerLabel, &p.ToolName, &p.Policy, &p.UpdatedAt, &p.GrantedDigest, &p.GrantedDefinition)
	return p, err
}

func (r repo) UserPolicies(ctx context.Context, userID, label string) ([]policy.UserPolicy, error) {
	rows, err := r.q.Query(ctx, `SELECT `+userPolicyCols+` FROM user_tool_policies
		WHERE user_id = $1 AND server_label = $2 ORDER BY tool_name`, userID, label)
	if err != nil {
		return nil, translate(err, "list personal policies")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (policy.UserPolicy, error) { return scanUserPolicy(row) })
	if out == nil {
		out = []policy.UserPolicy{}
	}
	return out, translate(err, "list personal policies")
}

func (r repo) UpsertUserPolicy(ctx context.Context, p policy.UserPolicy) error {
	_, err := r.q.Exec(ctx, `INSERT INTO user_tool_policies (user_id, server_label, tool_name, policy,
			granted_digest, granted_definition)
		VALUES ($1, $2, $3, $4, nullif($5, ''), $6)
		ON CONFLICT (user_id, server_label, tool_name) DO UPDATE SET policy = excluded.policy,
			granted_digest = excluded.granted_digest, granted_definition = excluded.granted_definition,
			updated_at = now()`,
		p.UserID, p.ServerLabel, p.ToolName, p.Policy, p.GrantedDigest, p.GrantedDefinition)
	err = translate(err, "set personal policy")
	if err != nil && apperr.KindOf(err) == apperr.NotFound { // the server (or the user) was deleted meanwhile
		return notFound(p.ServerLabel)
	}
	return err
}

func (r repo) DeleteUserPolicy(ctx context.Context, userID, label, tool string) (*policy.UserPolicy, error) {
	p, err := scanUserPolicy(r.q.QueryRow(ctx, `DELETE FROM user_tool_policies
		WHERE user_id = $1 AND server_label = $2 AND tool_name = $3 RETURNING `+userPolicyCols, userID, label, tool))
	err = translate(err, "delete personal policy")
	if apperr.KindOf(err) == apperr.NotFound { // there was none
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

func (r repo) InsertAudit(ctx context.Context, e policy.AuditEntry) error {
	// A receipt written without the actor's email (a turn taken over by
	// another replica knows only the owner's id) takes it from users; a
	// second receipt for one call is dropped.
	// In a conversation's transaction it goes with the next statement (pipeTx).
	return hold(ctx, r.q, "write audit entry", nil, `INSERT INTO audit_log (actor, actor_id, action, server_label, tool_name, before, after,
			call_id, conversation_id)
		VALUES (coalesce(nullif($1, ''), (SELECT email FROM users WHERE id = $2), 'toolgate'), nullif($2, ''), $3, $4, $5, $6, $7,
			nullif($8, ''), nullif($9, ''))
		ON CONFLICT (call_id) DO NOTHING`,
		e.Actor, e.ActorID, e.Action, e.ServerLabel, e.ToolName, e.Before, e.After, e.CallID, e.ConversationID)
}

func (r repo) Audit(ctx context.Context, q policy.AuditQuery) ([]policy.AuditEntry, error) {
	const cols = `id, at, actor, coalesce(actor_id, ''), action, server_label, tool_name, before, after`
	const filters = `($1 = 0 OR id < $1) AND ($2 = '' OR server_label = $2) AND (coalesce(cardinality($3::text[]), 0) = 0 OR action = ANY($3::text[]))`
	sql := `SELECT ` + cols + ` FROM audit_log WHERE ` + filters + ` ORDER BY id DESC LIMIT $4`
	args := []any{q.BeforeID, q.ServerLabel, q.Actions, q.Limit}
	if q.ActorID != "" {
		// A member's view: what they did, and the decisions and receipts
		// about their own conversations whoever made them (a request that
		// expired or a rule decided is Toolgate's entry). Each half reads
		// its own index (audit_log_actor, audit_log_conversation) newest
		// first; the union keeps the newest $4.
		sql = `SELECT ` + cols + ` FROM audit_log WHERE id IN (
				(SELECT id FROM audit_log WHERE actor_id = $5 AND ` + filters + ` ORDER BY id DESC LIMIT $4)
				UNION
				(SELECT a.id FROM conversations c CROSS JOIN LATERAL (
					SELECT id FROM audit_log WHERE conversation_id = c.id AND action IN ('approval.decide', 'tool.call') AND ` + filters + `
					ORDER BY id DESC LIMIT $4) a
				WHERE c.owner_id = $5 ORDER BY a.id DESC LIMIT $4))
			ORDER BY id DESC LIMIT $4`
		args = append(args, q.ActorID)
	}
	rows, err := r.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err, "read audit log")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (policy.AuditEntry, error) {
		var e policy.AuditEntry
		err := row.Scan(&e.ID, &e.At, &e.Actor, &e.ActorID, &e.Action, &e.ServerLabel, &e.ToolName, &e.Before, &e.After)
		return e, err
	})
	return out, translate(err, "read audit log")
}
