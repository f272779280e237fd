package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/rules"
)

// ruleStore is policy.RuleStore.
type ruleStore struct{ q querier }

func (r ruleStore) Get(ctx context.Context, l policy.RuleList) ([]rules.Rule, error) {
	var raw []byte
	err := r.q.QueryRow(ctx, `SELECT rules FROM approval_rules
		WHERE coalesce(server_label, '') = $1 AND coalesce(tool_name, '') = $2`, l.ServerLabel, l.ToolName).Scan(&raw)
	if noRows(err) {
		return []rules.Rule{}, nil
	}
	if err != nil {
		return nil, translate(err, "read rules")
	}
	out := []rules.Rule{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decode rules: %w", err)
	}
	return out, nil
}

func (r ruleStore) Put(ctx context.Context, l policy.RuleList, rs []rules.Rule, by string) error {
	if len(rs) == 0 {
		_, err := r.q.Exec(ctx, `DELETE FROM approval_rules
			WHERE coalesce(server_label, '') = $1 AND coalesce(tool_name, '') = $2`, l.ServerLabel, l.ToolName)
		return translate(err, "delete rules")
	}
	raw, err := json.Marshal(rs)
	if err != nil {
		return fmt.Errorf("encode rules: %w", err)
	}
	_, err = r.q.Exec(ctx, `INSERT INTO approval_rules (scope, server_label, tool_name, rules, updated_by)
		VALUES ($1, nullif($2, ''), nullif($3, ''), $4, $5)
		ON CONFLICT ((coalesce(server_label, '')), (coalesce(tool_name, '')))
		DO UPDATE SET rules = excluded.rules, updated_at = now(), updated_by = excluded.updated_by`,
		string(l.Scope()), l.ServerLabel, l.ToolName, raw, by)
	return translate(err, "write rules")
}

func (r ruleStore) Lists(ctx context.Context) ([]policy.RuleList, error) {
	rows, err := r.q.Query(ctx, `SELECT coalesce(server_label, ''), coalesce(tool_name, '') FROM approval_rules
		WHERE jsonb_array_length(rules) > 0`)
	if err != nil {
		return nil, translate(err, "list rules")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (policy.RuleList, error) {
		var l policy.RuleList
		return l, row.Scan(&l.ServerLabel, &l.ToolName)
	})
	return out, translate(err, "list rules")
}
