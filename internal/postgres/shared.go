package postgres

import (
	"context"

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
