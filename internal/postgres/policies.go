package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/policy"
)

// policyStore is policy.PolicyStore.
type policyStore struct{ q querier }

const policyCols = `server_label, tool_name, policy, locked, updated_at, updated_by, updated_by_id,
	coalesce(granted_digest, ''), granted_definition`

func scanPolicy(row pgx.Row) (policy.ToolPolicy, error) {
	var p policy.ToolPolicy
	err := row.Scan(&p.ServerLabel, &p.ToolName, &p.Policy, &p.Locked, &p.UpdatedAt, &p.UpdatedBy, &p.UpdatedByID,
		&p.GrantedDigest, &p.GrantedDefinition)
	return p, err
}

func (r policyStore) List(ctx context.Context, label string) ([]policy.ToolPolicy, error) {
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

func (r policyStore) Upsert(ctx context.Context, p policy.ToolPolicy) error {
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

func (r policyStore) Delete(ctx context.Context, label, tool string) (*policy.ToolPolicy, error) {
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

func (r policyStore) OfUser(ctx context.Context, userID, label string) ([]policy.UserPolicy, error) {
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

func (r policyStore) UpsertUser(ctx context.Context, p policy.UserPolicy) error {
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

func (r policyStore) DeleteUser(ctx context.Context, userID, label, tool string) (*policy.UserPolicy, error) {
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
