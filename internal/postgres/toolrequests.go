package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
)

// OfTool returns a tool's most recent approval requests, newest
// first, each with its conversation's owner: only q.OwnerID's unless
// q.Everyone.
func (r approvalStore) OfTool(ctx context.Context, q conversation.ToolApprovalsQuery) ([]conversation.OwnedApproval, error) {
	where, args := `a.server_label = $1 AND a.tool_name = $2`, []any{q.ServerLabel, q.ToolName, q.Limit}
	switch {
	case q.Everyone:
	case q.OwnerID == "":
		// An empty owner must never read as "everyone's".
		return nil, apperr.New(apperr.Internal, "no_owner", "reading a tool's approval requests without an owner")
	default:
		where, args = where+` AND c.owner_id = $4`, append(args, q.OwnerID)
	}
	rows, err := r.q.Query(ctx, `SELECT `+approvalCols+`, owner_id, owner_email, owner_role FROM (
			SELECT a.*, coalesce(u.id, '') AS owner_id, coalesce(u.email, '') AS owner_email, coalesce(u.role, '') AS owner_role
			FROM approval_requests a
			JOIN conversations c ON c.id = a.conversation_id
			LEFT JOIN users u ON u.id = c.owner_id
			WHERE `+where+`
			ORDER BY a.requested_at DESC, a.id DESC LIMIT $3) recent
		ORDER BY requested_at DESC, id DESC`, args...)
	if err != nil {
		return nil, translate(err, "read a tool's approval requests")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (conversation.OwnedApproval, error) {
		var (
			o    conversation.OwnedApproval
			role string
		)
		a, err := scanApproval(row, &o.Owner.ID, &o.Owner.Email, &role)
		o.Approval, o.Owner.Role = a, auth.Role(role)
		return o, err
	})
	if out == nil {
		out = []conversation.OwnedApproval{}
	}
	return out, translate(err, "read a tool's approval requests")
}
