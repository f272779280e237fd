-- Receipts: every tool call is an audit entry (action tool.call) whose
-- "after" is the receipt. call_id is the provider's mcp_call item id: the
-- relay and the read-back may both see one call, so a unique index makes the
-- second insert a no-op. conversation_id is plain text, not a foreign key:
-- a receipt outlives its conversation.

-- +goose Up
ALTER TABLE audit_log
    ADD COLUMN call_id         text,
    ADD COLUMN conversation_id text;
CREATE UNIQUE INDEX audit_log_call ON audit_log (call_id);
CREATE INDEX audit_log_action ON audit_log (action, id DESC);

-- +goose Down
DROP INDEX audit_log_action;
DROP INDEX audit_log_call;
ALTER TABLE audit_log DROP COLUMN conversation_id, DROP COLUMN call_id;
