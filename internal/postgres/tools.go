package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/internal/policy"
)

// toolStore is policy.ToolStore.
type toolStore struct{ q querier }

// Tools joins discovered tools with explicit policies; a full join so that a
// policy for a tool not discovered (yet) shows up too.
func (r toolStore) List(ctx context.Context, label string) ([]policy.Tool, error) {
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

func (r toolStore) Replace(ctx context.Context, label string, tools []policy.DiscoveredTool, at time.Time) error {
	if err := r.Upsert(ctx, label, tools, at); err != nil {
		return err
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	_, err := r.q.Exec(ctx, `DELETE FROM mcp_tools WHERE server_label = $1 AND NOT (name = ANY($2))`, label, names)
	return translate(err, "remove tools the server no longer lists")
}

func (r toolStore) Upsert(ctx context.Context, label string, tools []policy.DiscoveredTool, at time.Time) error {
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
