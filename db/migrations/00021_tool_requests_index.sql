-- The rule editor's "try it" evaluates candidate rules over one tool's most
-- recent approval requests (POST .../tools/{toolName}/rules/try): an index
-- by tool, newest first, keeps that read short however long the history.

-- +goose Up
CREATE INDEX approval_requests_tool ON approval_requests (server_label, tool_name, requested_at DESC, id DESC);

-- +goose Down
DROP INDEX approval_requests_tool;
