-- The health of each MCP server: whether it could be reached the last time
-- anyone tried (Toolgate's own discovery, or the model's provider listing
-- its tools or calling one), since when it fails, why, and when it was last
-- checked. Requests leave out servers that are unreachable, and a bounded
-- background re-check (MCP_HEALTH_RECHECK) offers them again once they
-- answer. The state is here, not in a replica's memory, so every replica
-- skips the same servers and one of them re-checks each server per interval.

-- +goose Up
ALTER TABLE mcp_servers
    ADD COLUMN health_status        text NOT NULL DEFAULT 'unknown'
        CHECK (health_status IN ('unknown', 'ok', 'unreachable')),
    -- When the current run of failures began; only while unreachable.
    ADD COLUMN health_since         timestamptz,
    -- Why the last check failed; only while unreachable.
    ADD COLUMN health_error         text,
    -- The last check, failed or not (a re-check claims it before it runs).
    ADD COLUMN health_checked_at    timestamptz,
    -- The last check that found the server reachable.
    ADD COLUMN health_ok_at         timestamptz,
    ADD CONSTRAINT mcp_servers_health_since CHECK ((health_status = 'unreachable') = (health_since IS NOT NULL));

-- Servers registered before: their last discovery says how they were.
UPDATE mcp_servers SET
    health_status     = CASE WHEN tools_refresh_error IS NULL THEN 'ok' ELSE 'unreachable' END,
    health_since      = CASE WHEN tools_refresh_error IS NULL THEN NULL ELSE tools_refreshed_at END,
    health_error      = tools_refresh_error,
    health_checked_at = tools_refreshed_at,
    health_ok_at      = CASE WHEN tools_refresh_error IS NULL THEN tools_refreshed_at END
WHERE tools_refreshed_at IS NOT NULL;

-- The re-check looks for unreachable servers not checked for a while.
CREATE INDEX mcp_servers_unreachable ON mcp_servers (health_checked_at) WHERE health_status = 'unreachable';

-- +goose Down
DROP INDEX mcp_servers_unreachable;
ALTER TABLE mcp_servers
    DROP CONSTRAINT mcp_servers_health_since,
    DROP COLUMN health_ok_at,
    DROP COLUMN health_checked_at,
    DROP COLUMN health_error,
    DROP COLUMN health_since,
    DROP COLUMN health_status;
