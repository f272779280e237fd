-- Issue 27, "decide from anywhere": the signed one-time approve and deny
-- links a webhook's approval.required delivery carries. A link acts as the
-- person the request was sent for (its conversation's owner), for one
-- decision on one request, once, until the request expires.
--
-- The token itself is never stored: token_hash is its SHA-256. The token is
-- derived (HMAC-SHA256 under a key derived from SECRETS_KEY) from the
-- delivery, the request and the decision, so every retry of a delivery
-- carries the same link and re-inserting it changes nothing (ON CONFLICT DO
-- NOTHING). used_at is set by the one conditional UPDATE that claims the
-- link: of two concurrent uses exactly one sees it unset.

-- +goose Up
CREATE TABLE approval_links (
    token_hash          bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    -- A short public name for the audit log and the logs: the first 8 bytes
    -- of the hash in hex ("apl_…"); it does not let anyone use the link.
    id                  text NOT NULL UNIQUE,
    approval_request_id text NOT NULL REFERENCES approval_requests (id) ON DELETE CASCADE,
    user_id             text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    decision            text NOT NULL CHECK (decision IN ('approve', 'deny')),
    -- The delivery that carried it (no foreign key: deliveries are pruned).
    delivery_id         text NOT NULL,
    -- When the request expires (its server's approval_ttl_seconds or
    -- APPROVAL_TTL after it asked); null: it never expires.
    expires_at          timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    used_at             timestamptz
);
CREATE INDEX approval_links_request ON approval_links (approval_request_id);

-- +goose Down
DROP TABLE approval_links;
