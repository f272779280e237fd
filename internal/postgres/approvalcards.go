package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/policy"
)

// cardStore is policy.CardStore.
type cardStore struct{ q querier }

const cardCols = `server_label, tool_name, approval_text, choices, updated_at, updated_by`

func scanCard(row pgx.Row) (policy.ApprovalCard, error) {
	var c policy.ApprovalCard
	var choices []string
	err := row.Scan(&c.ServerLabel, &c.ToolName, &c.Text, &choices, &c.UpdatedAt, &c.UpdatedBy)
	c.Choices = toChoices(choices)
	return c, err
}

// toChoices keeps NULL (every choice) apart from a list.
func toChoices(cs []string) []policy.Choice {
	if cs == nil {
		return nil
	}
	out := make([]policy.Choice, len(cs))
	for i, c := range cs {
		out[i] = policy.Choice(c)
	}
	return out
}

func fromChoices(cs []policy.Choice) []string {
	if cs == nil {
		return nil
	}
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

func (r cardStore) Get(ctx context.Context, label, tool string) (policy.ApprovalCard, bool, error) {
	c, err := scanCard(r.q.QueryRow(ctx, `SELECT `+cardCols+` FROM tool_approval_cards
		WHERE server_label = $1 AND tool_name = $2`, label, tool))
	if noRows(err) {
		return policy.ApprovalCard{ServerLabel: label, ToolName: tool}, false, nil
	}
	if err != nil {
		return c, false, translate(err, "read approval card")
	}
	return c, true, nil
}

func (r cardStore) List(ctx context.Context, label string) ([]policy.ApprovalCard, error) {
	rows, err := r.q.Query(ctx, `SELECT `+cardCols+` FROM tool_approval_cards
		WHERE server_label = $1 ORDER BY tool_name COLLATE "C"`, label)
	if err != nil {
		return nil, translate(err, "list approval cards")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (policy.ApprovalCard, error) { return scanCard(row) })
	if out == nil {
		out = []policy.ApprovalCard{}
	}
	return out, translate(err, "list approval cards")
}

func (r cardStore) Put(ctx context.Context, c policy.ApprovalCard, by string) (policy.ApprovalCard, error) {
	out, err := scanCard(r.q.QueryRow(ctx, `INSERT INTO tool_approval_cards (server_label, tool_name, approval_text, choices, updated_by)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (server_label, tool_name) DO UPDATE SET approval_text = excluded.approval_text,
			choices = excluded.choices, updated_at = now(), updated_by = excluded.updated_by
		RETURNING `+cardCols, c.ServerLabel, c.ToolName, c.Text, fromChoices(c.Choices), by))
	return out, translate(err, "write approval card")
}

func (r cardStore) Delete(ctx context.Context, label, tool string) error {
	_, err := r.q.Exec(ctx, `DELETE FROM tool_approval_cards WHERE server_label = $1 AND tool_name = $2`, label, tool)
	return translate(err, "delete approval card")
}
