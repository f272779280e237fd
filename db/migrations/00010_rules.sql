-- Argument rules (CEL): per tool, per server and workspace-wide, an ordered
-- list of {when, decision, reason}. One row per list; the list is replaced
-- as a whole (PUT), so it is kept as one jsonb array in its order. The
-- workspace's list has no server, a server's no tool. Rules outlive a tool
-- that discovery no longer sees (like tool_policies), not their server.

-- +goose Up
CREATE TABLE approval_rules (
    scope        text NOT NULL CHECK (scope IN ('workspace', 'server', 'tool')),
    server_label text REFERENCES mcp_servers (label) ON DELETE CASCADE,
    tool_name    text,
    rules        jsonb NOT NULL CHECK (jsonb_typeof(rules) = 'array'),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    updated_by   text NOT NULL,
    CHECK ((scope = 'workspace') = (server_label IS NULL)),
    CHECK ((scope = 'tool') = (tool_name IS NOT NULL))
);
CREATE UNIQUE INDEX approval_rules_list ON approval_rules (coalesce(server_label, ''), coalesce(tool_name, ''));

-- +goose Down
DROP TABLE approval_rules;
