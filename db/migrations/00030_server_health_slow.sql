-- A slow MCP server slows only itself, and one failed call does not take a
-- working server out of requests (README, "When an MCP server is down").
--
-- * health_status 'slow': the last discovery listed the server's tools, but
--   took longer than MCP_LIST_TIME_LIMIT. The model's provider lists every
--   offered server's tools in every request, so a slow server is left out
--   (notice server_skipped) until a check finds it fast again; since when is
--   in health_since, as for 'unreachable'.
-- * health_list_ms: how long the last discovery that listed the tools took.
-- * health_failures: failed calls in a row the turns reported (a call the
--   provider could not deliver); the server becomes 'unreachable' at
--   MCP_HEALTH_FAILURES of them, and any success starts the count again.
--   Neither column bumps policy_version (00024): grouping does not read them.
-- * The background check now takes every enabled server (reachable ones
--   every MCP_HEALTH_CHECK, to measure their listing time), so its index is
--   no longer only on unreachable servers.

-- +goose Up
ALTER TABLE mcp_servers
    DROP CONSTRAINT mcp_servers_health_status_check,
    ADD CONSTRAINT mcp_servers_health_status_check CHECK (health_status IN ('unknown', 'ok', 'unreachable', 'slow')),
    DROP CONSTRAINT mcp_servers_health_since,
    ADD CONSTRAINT mcp_servers_health_since CHECK ((health_status IN ('unreachable', 'slow')) = (health_since IS NOT NULL)),
    ADD COLUMN health_list_ms  integer CHECK (health_list_ms >= 0),
    ADD COLUMN health_failures integer NOT NULL DEFAULT 0 CHECK (health_failures >= 0);
DROP INDEX mcp_servers_unreachable;
CREATE INDEX mcp_servers_health_checked ON mcp_servers (health_checked_at) WHERE enabled;

-- +goose Down
DROP INDEX mcp_servers_health_checked;
CREATE INDEX mcp_servers_unreachable ON mcp_servers (health_checked_at) WHERE health_status = 'unreachable';
-- A slow server was reachable: it is ok for the code of before.
UPDATE mcp_servers SET health_status = 'ok', health_since = NULL, health_error = NULL WHERE health_status = 'slow';
ALTER TABLE mcp_servers
    DROP COLUMN health_failures,
    DROP COLUMN health_list_ms,
    DROP CONSTRAINT mcp_servers_health_since,
    ADD CONSTRAINT mcp_servers_health_since CHECK ((health_status = 'unreachable') = (health_since IS NOT NULL)),
    DROP CONSTRAINT mcp_servers_health_status_check,
    ADD CONSTRAINT mcp_servers_health_status_check CHECK (health_status IN ('unknown', 'ok', 'unreachable'));
