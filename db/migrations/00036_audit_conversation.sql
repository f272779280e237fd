-- A member's audit view shows, besides what they did, every approval.decide
-- entry and receipt about their own conversations (a request that expired,
-- ended with its turn or was decided by a rule is Toolgate's entry, not
-- theirs). This index finds a conversation's entries, newest first.

-- +goose Up
CREATE INDEX audit_log_conversation ON audit_log (conversation_id, id DESC) WHERE conversation_id IS NOT NULL;

-- +goose Down
DROP INDEX audit_log_conversation;
