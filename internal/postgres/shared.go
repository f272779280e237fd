package postgres

import (
	"context"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/secrets"
)

// Box is the key that seals secrets at rest (UseSecrets), for the stores in
// the subpackages (webhookdb seals the webhooks' signing secrets with it).
func Box() *secrets.Box { return box() }

// InsertAudit writes an audit entry on q (a transaction of a subpackage's
// store), as the policy store does.
func InsertAudit(ctx context.Context, q Querier, e policy.AuditEntry) error {
	return repo{q}.InsertAudit(ctx, e)
}

// ApprovalOf reads approval request id of owner's conversations, as the
// turn engine's store does (its server's time limit with it): for the
// signed links (linkdb). not_found: none, or another person's.
func ApprovalOf(ctx context.Context, q Querier, owner, id string) (conversation.Approval, error) {
	aps, err := approvalStore{q}.approvals(ctx, "read an approval request", `id = $1`+ownedBy(2), id, owner)
	if err == nil && len(aps) == 0 {
		err = apperr.NotFoundf("approval_not_found", "there is no approval request %q of yours", id)
	}
	if err != nil {
		return conversation.Approval{}, err
	}
	return aps[0], nil
}
