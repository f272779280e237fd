// Package linkdb is the Postgres implementation of approvallink.Store: the
// signed one-time approve and deny links of approval requests
// (approval_links; only the tokens' hashes).
package linkdb

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/approvallink"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/postgres"
)

// Store is the Postgres implementation of approvallink.Store.
type Store struct{ pool *pgxpool.Pool }

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

var _ approvallink.Store = (*Store)(nil)

// Create stores the links for their request (all of one request), bound to
// its conversation's owner, in one statement; a link stored already (a
// retried delivery) is left as it is.
func (s *Store) Create(ctx context.Context, links []approvallink.NewLink) (bool, error) {
	if len(links) == 0 {
		return true, nil
	}
	hashes, ids, decisions := make([][]byte, len(links)), make([]string, len(links)), make([]string, len(links))
	for i, l := range links {
		hashes[i], ids[i], decisions[i] = l.Hash, l.ID, l.Decision
	}
	first := links[0]
	var found bool
	err := s.pool.QueryRow(ctx, `WITH req AS (
			SELECT a.id, c.owner_id FROM approval_requests a JOIN conversations c ON c.id = a.conversation_id
			WHERE a.id = $4 AND c.owner_id IS NOT NULL
		), ins AS (
			INSERT INTO approval_links (token_hash, id, approval_request_id, user_id, decision, delivery_id, expires_at)
			SELECT l.hash, l.id, req.id, req.owner_id, l.decision, $5, $6
			FROM req, unnest($1::bytea[], $2::text[], $3::text[]) AS l(hash, id, decision)
			ON CONFLICT (token_hash) DO NOTHING
			RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM req)`, hashes, ids, decisions, first.ApprovalRequestID, first.DeliveryID, first.ExpiresAt).Scan(&found)
	return found, postgres.Translate(err, "store approval links")
}

// ByHash returns the link, its request's conversation and its person.
func (s *Store) ByHash(ctx context.Context, hash []byte) (approvallink.Link, error) {
	var l approvallink.Link
	err := s.pool.QueryRow(ctx, `SELECT l.id, l.approval_request_id, a.conversation_id, c.title, l.decision, l.delivery_id,
			l.expires_at, l.used_at, u.id, u.email, u.role, u.disabled
		FROM approval_links l
		JOIN approval_requests a ON a.id = l.approval_request_id
		JOIN conversations c ON c.id = a.conversation_id
		JOIN users u ON u.id = l.user_id
		WHERE l.token_hash = $1`, hash).Scan(&l.ID, &l.ApprovalRequestID, &l.ConversationID, &l.ConversationTitle, &l.Decision,
		&l.DeliveryID, &l.ExpiresAt, &l.UsedAt, &l.Person.ID, &l.Person.Email, &l.Person.Role, &l.Person.Disabled)
	if postgres.NoRows(err) {
		return l, apperr.NotFoundf("link_not_found", "there is no such link")
	}
	return l, postgres.Translate(err, "read an approval link")
}

// Claim marks the link used if it is unused and unexpired, by the
// database's clock: one conditional UPDATE, so of concurrent claims
// exactly one gets the row.
func (s *Store) Claim(ctx context.Context, hash []byte) (time.Time, bool, error) {
	var at time.Time
	err := s.pool.QueryRow(ctx, `UPDATE approval_links SET used_at = clock_timestamp()
		WHERE token_hash = $1 AND used_at IS NULL AND (expires_at IS NULL OR expires_at > clock_timestamp())
		RETURNING used_at`, hash).Scan(&at)
	if postgres.NoRows(err) {
		return at, false, nil
	}
	return at, err == nil, postgres.Translate(err, "use an approval link")
}

// Release unmarks the claim made at usedAt.
func (s *Store) Release(ctx context.Context, hash []byte, usedAt time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE approval_links SET used_at = NULL WHERE token_hash = $1 AND used_at = $2`, hash, usedAt)
	return postgres.Translate(err, "release an approval link")
}

// Approval reads the request of owner's.
func (s *Store) Approval(ctx context.Context, owner, requestID string) (conversation.Approval, error) {
	return postgres.ApprovalOf(ctx, s.pool, owner, requestID)
}

// Audit writes e.
func (s *Store) Audit(ctx context.Context, e policy.AuditEntry) error {
	return postgres.InsertAudit(ctx, s.pool, e)
}
