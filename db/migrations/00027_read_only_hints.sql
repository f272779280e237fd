-- A server's readOnlyHint annotations are its claim until an admin accepts
-- them (PATCH /api/mcp/servers/{label} {"read_only_hints": "trusted"},
-- audited): under ask_unless_read_only a tool of a server whose hints are
-- "claimed" asks (asks_because read_only_claimed).
--
-- Existing servers start "claimed" too: nobody on an existing install has
-- accepted any server's hints, the old behaviour only assumed them. After
-- the upgrade their read-only tools ask until an admin accepts each
-- server's hints once (one click in Settings); asking more is the safe way
-- to be wrong. The offline demo server is Toolgate's own code and is
-- accepted at start.

-- +goose Up
ALTER TABLE mcp_servers ADD COLUMN read_only_hints text NOT NULL DEFAULT 'claimed'
    CHECK (read_only_hints IN ('claimed', 'trusted'));

-- Grouping tools into requests reads the column: a change bumps the
-- policy version like the other columns it reads (00024).
CREATE CONSTRAINT TRIGGER mcp_servers_policy_version_hints AFTER UPDATE ON mcp_servers
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.read_only_hints IS DISTINCT FROM NEW.read_only_hints)
    EXECUTE FUNCTION bump_policy_version();

-- +goose Down
DROP TRIGGER mcp_servers_policy_version_hints ON mcp_servers;
ALTER TABLE mcp_servers DROP COLUMN read_only_hints;
