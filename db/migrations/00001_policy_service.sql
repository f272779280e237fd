-- The policy service: MCP servers, their discovered tools, explicit per-tool
-- approval policies, global settings and the audit log.

-- +goose Up
CREATE TABLE settings (
    -- Exactly one row: the boolean key can only be true.
    id             boolean PRIMARY KEY DEFAULT true CHECK (id),
    default_policy text NOT NULL DEFAULT 'never' CHECK (default_policy IN ('never', 'always', 'blocked')),
    local_user     text NOT NULL DEFAULT 'local',
    updated_at     timestamptz NOT NULL DEFAULT now()
);
INSERT INTO settings DEFAULT VALUES;

CREATE TABLE mcp_servers (
    label               text PRIMARY KEY CHECK (label ~ '^[A-Za-z0-9_-]{1,64}$'),
    url                 text NOT NULL,
    description         text NOT NULL DEFAULT '',
    -- Header values are secrets: the API only ever shows them masked.
    headers             jsonb NOT NULL DEFAULT '{}',
    default_policy      text CHECK (default_policy IN ('never', 'always', 'blocked')),
    enabled             boolean NOT NULL DEFAULT true,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    tools_refreshed_at  timestamptz,
    tools_refresh_error text
);
-- "CRM" and "crm" side by side would only confuse people and the model.
CREATE UNIQUE INDEX mcp_servers_label_ci ON mcp_servers (lower(label));

CREATE TABLE mcp_tools (
    server_label          text NOT NULL REFERENCES mcp_servers (label) ON DELETE CASCADE,
    name                  text NOT NULL,
    title                 text NOT NULL DEFAULT '',
    description           text NOT NULL DEFAULT '',
    input_schema          jsonb NOT NULL,
    annotations           jsonb NOT NULL,
    digest                text NOT NULL,
    first_seen_at         timestamptz NOT NULL,
    definition_changed_at timestamptz NOT NULL,
    PRIMARY KEY (server_label, name)
);

-- A policy may name a tool that discovery has not seen (yet), so there is no
-- foreign key to mcp_tools.
CREATE TABLE tool_policies (
    server_label text NOT NULL REFERENCES mcp_servers (label) ON DELETE CASCADE,
    tool_name    text NOT NULL,
    policy       text NOT NULL CHECK (policy IN ('never', 'always', 'blocked')),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    updated_by   text NOT NULL,
    PRIMARY KEY (server_label, tool_name)
);

-- Entries outlive what they describe, so server_label is not a foreign key.
CREATE TABLE audit_log (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor        text NOT NULL,
    action       text NOT NULL,
    server_label text,
    tool_name    text,
    before       jsonb,
    after        jsonb
);
CREATE INDEX audit_log_server ON audit_log (server_label, id DESC);

-- +goose Down
DROP TABLE audit_log;
DROP TABLE tool_policies;
DROP TABLE mcp_tools;
DROP TABLE mcp_servers;
DROP TABLE settings;
