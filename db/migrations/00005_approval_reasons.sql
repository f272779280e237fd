-- Why an approval request asked, as the card shows it: beside the policy's
-- source, the reason (not_read_only, new_tool, changed, policy) and, for a
-- tool changed since it was allowed, which parts of its definition changed.

-- +goose Up
ALTER TABLE approval_requests ADD COLUMN asks_reason text;
ALTER TABLE approval_requests ADD COLUMN asks_fields jsonb;

-- +goose Down
ALTER TABLE approval_requests DROP COLUMN asks_fields, DROP COLUMN asks_reason;
