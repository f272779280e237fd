// Package approvallink makes and redeems the signed one-time approve and
// deny links that a webhook's approval.required delivery carries ("decide
// from anywhere", issue 27).
//
// A link is bound to one approval request, to the person it was sent for
// (the request's conversation's owner) and to one decision. Opening it
// never decides (link previews and mail scanners open links): the web app
// shows the card (View) and the person's click POSTs the decision
// (Decide), which acts as that person, once, until the request expires.
//
// The token is 256 bits of HMAC-SHA256 under a key derived from
// SECRETS_KEY over the delivery, the request and the decision: every retry
// of a delivery carries the same link, and only its SHA-256 is stored
// (approval_links). Used, expired, unknown (tampered) and other-request
// links are refused with a code and a sentence, changing nothing.
package approvallink

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// The decisions a link makes.
const (
	Approve = "approve"
	Deny    = "deny"
)

// TokenPrefix starts every link token: "tgl_" and 43 base64url characters.
const TokenPrefix = "tgl_"

// tokenLen is the length of a token: the prefix and 32 bytes, base64url.
var tokenLen = len(TokenPrefix) + base64.RawURLEncoding.EncodedLen(sha256.Size)

// ActionUsed is the audit action written when a link decided a request,
// beside the decision's own approval.decide entry: the decision came by
// link.
const ActionUsed = "approval.link_used"

// Link is a stored link, with the person it acts as.
type Link struct {
	ID                string // apl_<hex>: a name for logs and the audit log, not usable as the link
	ApprovalRequestID string
	ConversationID    string
	ConversationTitle string
	Decision          string
	DeliveryID        string
	ExpiresAt         *time.Time // nil: the request never expires
	UsedAt            *time.Time
	// Person is the user the link acts as: the request's owner.
	Person auth.User
}

// NewLink is a link to store: its token's hash, never the token.
type NewLink struct {
	Hash              []byte
	ID                string
	ApprovalRequestID string
	Decision          string
	DeliveryID        string
	ExpiresAt         *time.Time
}

// Store keeps the links (internal/postgres/linkdb).
type Store interface {
	// Create stores the links for their request, bound to its
	// conversation's owner; a link stored already is left as it is. false:
	// the request does not exist (its conversation was deleted).
	Create(ctx context.Context, links []NewLink) (bool, error)
	// ByHash returns the link whose token hashes to hash (not_found: none).
	ByHash(ctx context.Context, hash []byte) (Link, error)
	// Claim marks the link used at the database's now if it is unused and
	// unexpired; false: it was used, or it expired, meanwhile.
	Claim(ctx context.Context, hash []byte) (time.Time, bool, error)
	// Release unmarks a claim made at usedAt (the decision failed).
	Release(ctx context.Context, hash []byte, usedAt time.Time) error
	// Approval returns the request as stored, with its conversation (not_found: none).
	Approval(ctx context.Context, owner, requestID string) (conversation.Approval, error)
	// Audit writes an audit entry.
	Audit(ctx context.Context, e policy.AuditEntry) error
}

// Decider records a decision as the person ctx carries (auth.WithUser),
// as the inbox's POST /api/approvals/{id}/decision does: a chat's request
// through the turn engine (its follow-up runs in the background), an
// agent's held call through conversation.HeldDecider. A request that is
// not pending is refused with its state, changing nothing.
type Decider interface {
	Decide(ctx context.Context, d conversation.Decision) (conversation.Approval, error)
}

// Expiry is what the links need of the turn engine's record keeper
// (record.Keeper): when a request expires.
type Expiry interface {
	WithExpiry(a conversation.Approval) conversation.Approval
}

// Key derives tokens: 32 bytes derived from SECRETS_KEY
// (secrets.Box.Derive("approval-link")).
type Key []byte

// token is the link of one delivery's decision on one request.
func (k Key) token(deliveryID, requestID, decision string) string {
	m := hmac.New(sha256.New, k)
	m.Write([]byte("toolgate approval link v1\x00" + deliveryID + "\x00" + requestID + "\x00" + decision))
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// hash is what the store keeps of a token.
func hash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// linkID names a link by its hash.
func linkID(h []byte) string { return "apl_" + hex.EncodeToString(h[:8]) }

// wellFormed says whether s could be a token at all (so that a mangled
// one is refused without a query).
func wellFormed(s string) bool {
	if len(s) != tokenLen || !strings.HasPrefix(s, TokenPrefix) {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(s[len(TokenPrefix):])
	return err == nil
}
