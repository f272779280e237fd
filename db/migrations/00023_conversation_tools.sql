-- Two per-scope settings of issue 14 §2.
--
-- conversations.tools: the person's choice of the servers and tools a
-- conversation offers the model, {"servers": {"<label>": {"enabled": bool,
-- "tools": null | ["name", ...]}}}. A server the object does not name offers
-- everything its policies allow (so servers added later are on), and
-- "tools": null means all of the server's tools.
--
-- mcp_servers.approval_ttl_seconds: how long an approval request of the
-- server waits for a decision before it expires; NULL means APPROVAL_TTL,
-- 0 that its requests never expire.

-- +goose Up
ALTER TABLE conversations ADD COLUMN tools jsonb NOT NULL DEFAULT '{"servers": {}}';
ALTER TABLE mcp_servers ADD COLUMN approval_ttl_seconds integer
    CHECK (approval_ttl_seconds = 0 OR approval_ttl_seconds BETWEEN 60 AND 604800);

-- +goose Down
ALTER TABLE mcp_servers DROP COLUMN approval_ttl_seconds;
ALTER TABLE conversations DROP COLUMN tools;
