-- The approval statistics (GET /api/approvals/stats) count a period's
-- tool.call and approval.decide entries by when they were written: this
-- index reads one action's entries of a period without scanning the rest
-- of the log.

-- +goose Up
CREATE INDEX audit_log_action_at ON audit_log (action, at);

-- +goose Down
DROP INDEX audit_log_action_at;
