-- Grants that end (issue 14 §2). "Approve for this conversation" and
-- "approve for 1 hour" become rows a person can list and revoke, with an id
-- a call's allowed_by names. A conversation grant (conversation_id set,
-- expires_at NULL) lasts until the conversation is deleted; a timed grant
-- (conversation_id NULL, expires_at set) covers every conversation of its
-- owner until it expires. Revoked and expired grants are kept (listed with
-- include=expired) but no request is built from them: the tool asks again.

-- +goose Up
CREATE TABLE grants (
    id                  text PRIMARY KEY CHECK (id ~ '^grant_[0-9a-f]{24}$'),
    owner_id            text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    conversation_id     text REFERENCES conversations (id) ON DELETE CASCADE,
    server_label        text NOT NULL,
    tool_name           text NOT NULL,
    approval_request_id text NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    expires_at          timestamptz,
    revoked_at          timestamptz,
    -- Every grant ends: with its conversation, or at a time.
    CHECK (conversation_id IS NOT NULL OR expires_at IS NOT NULL)
);
CREATE INDEX grants_owner ON grants (owner_id, created_at DESC);
CREATE INDEX grants_conversation ON grants (conversation_id) WHERE conversation_id IS NOT NULL;

-- Existing allowances become conversation grants of the conversation's
-- owner (conversations without one were never reachable by anyone).
INSERT INTO grants (id, owner_id, conversation_id, server_label, tool_name, approval_request_id, created_at)
SELECT 'grant_' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 24), c.owner_id,
       g.conversation_id, g.server_label, g.tool_name, g.approval_request_id, g.granted_at
FROM conversation_grants g JOIN conversations c ON c.id = g.conversation_id
WHERE c.owner_id IS NOT NULL;

DROP TABLE conversation_grants;

ALTER TABLE approval_requests DROP CONSTRAINT approval_requests_scope_check;
ALTER TABLE approval_requests ADD CONSTRAINT approval_requests_scope_check
    CHECK (scope IN ('once', 'conversation', 'hour'));

-- +goose Down
UPDATE approval_requests SET scope = 'once' WHERE scope = 'hour';
ALTER TABLE approval_requests DROP CONSTRAINT approval_requests_scope_check;
ALTER TABLE approval_requests ADD CONSTRAINT approval_requests_scope_check
    CHECK (scope IN ('once', 'conversation'));

CREATE TABLE conversation_grants (
    conversation_id     text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    server_label        text NOT NULL,
    tool_name           text NOT NULL,
    approval_request_id text NOT NULL,
    granted_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (conversation_id, server_label, tool_name)
);
INSERT INTO conversation_grants (conversation_id, server_label, tool_name, approval_request_id, granted_at)
SELECT DISTINCT ON (conversation_id, server_label, tool_name)
       conversation_id, server_label, tool_name, approval_request_id, created_at
FROM grants WHERE conversation_id IS NOT NULL AND revoked_at IS NULL
ORDER BY conversation_id, server_label, tool_name, created_at;
DROP TABLE grants;
