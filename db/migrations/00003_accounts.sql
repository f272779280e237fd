-- Accounts and ownership: users (local passwords or OIDC), sessions stored
-- here so they can be revoked, personal API tokens (only hashes kept),
-- one-time tokens (the first-run setup link, the offline demo's sign-in
-- link), failed sign-ins for rate limiting, conversations owned by their
-- creator, personal policies beside the workspace's, locks, and what a
-- "never" was granted for (the tool's digest then) so a changed tool asks
-- again. The local_user setting goes: the audit actor is the signed-in user.

-- +goose Up
CREATE TABLE users (
    id            text PRIMARY KEY CHECK (id ~ '^usr_[0-9a-f]{24}$'),
    email         text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    -- argon2id PHC string; NULL for accounts that only sign in with OIDC.
    password_hash text,
    role          text NOT NULL CHECK (role IN ('admin', 'member')),
    disabled      boolean NOT NULL DEFAULT false,
    oidc_issuer   text,
    oidc_subject  text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    last_login_at timestamptz
);
CREATE UNIQUE INDEX users_email_ci ON users (lower(email));
CREATE UNIQUE INDEX users_oidc ON users (oidc_issuer, oidc_subject) WHERE oidc_subject IS NOT NULL;

-- The cookie holds a random secret; only its SHA-256 is stored.
CREATE TABLE sessions (
    token_hash   bytea PRIMARY KEY,
    user_id      text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    -- Absolute expiry; the idle expiry is last_seen_at + the idle timeout.
    expires_at   timestamptz NOT NULL,
    user_agent   text NOT NULL DEFAULT '',
    remote_addr  text NOT NULL DEFAULT ''
);
CREATE INDEX sessions_user ON sessions (user_id);

-- Personal API tokens: shown once, stored hashed.
CREATE TABLE api_tokens (
    id           text PRIMARY KEY,
    user_id      text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         text NOT NULL,
    token_hash   bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz
);
CREATE INDEX api_tokens_user ON api_tokens (user_id);

-- One-time links: 'setup' creates the first admin, 'login' signs a user in.
CREATE TABLE one_time_tokens (
    token_hash bytea PRIMARY KEY,
    purpose    text NOT NULL CHECK (purpose IN ('setup', 'login')),
    user_id    text REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);

-- Failed sign-ins, by key (the email and the client address), for the
-- rate limit; shared by every replica.
CREATE TABLE login_failures (
    key text NOT NULL,
    at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX login_failures_key ON login_failures (key, at);

-- Conversations belong to their creator. Rows from before accounts get the
-- first admin when one is created.
ALTER TABLE conversations ADD COLUMN owner_id text REFERENCES users (id);
CREATE INDEX conversations_owner ON conversations (owner_id, updated_at DESC, id DESC);

-- The audit actor is a user (actor keeps the email for reading; actor_id
-- the account). Rows from before accounts get the first admin.
ALTER TABLE audit_log ADD COLUMN actor_id text;
CREATE INDEX audit_log_actor ON audit_log (actor_id, id DESC);
ALTER TABLE approval_requests ADD COLUMN decided_by_id text;

-- The global and server defaults gain ask_unless_read_only: tools that
-- declare readOnlyHint run without asking, every other tool asks. It is the
-- default of a fresh install; an install still on the old default (never)
-- moves to it.
ALTER TABLE settings DROP CONSTRAINT settings_default_policy_check;
ALTER TABLE settings ADD CONSTRAINT settings_default_policy_check
    CHECK (default_policy IN ('never', 'always', 'blocked', 'ask_unless_read_only'));
ALTER TABLE settings ALTER COLUMN default_policy SET DEFAULT 'ask_unless_read_only';
UPDATE settings SET default_policy = 'ask_unless_read_only' WHERE default_policy = 'never';
ALTER TABLE settings ADD COLUMN default_policy_locked boolean NOT NULL DEFAULT false;
ALTER TABLE settings DROP COLUMN local_user;

ALTER TABLE mcp_servers DROP CONSTRAINT mcp_servers_default_policy_check;
ALTER TABLE mcp_servers ADD CONSTRAINT mcp_servers_default_policy_check
    CHECK (default_policy IN ('never', 'always', 'blocked', 'ask_unless_read_only'));
ALTER TABLE mcp_servers ADD COLUMN default_policy_locked boolean NOT NULL DEFAULT false;
-- Tools first seen after this ask until someone sets their policy.
ALTER TABLE mcp_servers ADD COLUMN first_discovered_at timestamptz;
UPDATE mcp_servers s SET first_discovered_at = (SELECT min(first_seen_at) FROM mcp_tools t WHERE t.server_label = s.label);

-- Workspace policies (set by admins) can be locked; a "never" remembers the
-- definition it was granted for, so a tool that changes since asks again.
ALTER TABLE tool_policies ADD COLUMN locked boolean NOT NULL DEFAULT false;
ALTER TABLE tool_policies ADD COLUMN updated_by_id text;
ALTER TABLE tool_policies ADD COLUMN granted_digest text;
ALTER TABLE tool_policies ADD COLUMN granted_definition jsonb;
UPDATE tool_policies p SET granted_digest = t.digest,
    granted_definition = jsonb_build_object('title', t.title, 'description', t.description,
        'input_schema', t.input_schema, 'annotations', t.annotations)
    FROM mcp_tools t WHERE t.server_label = p.server_label AND t.name = p.tool_name AND p.policy = 'never';

-- Personal policies: a member's own, for their own conversations. They
-- never loosen a locked workspace policy or an admin's block.
CREATE TABLE user_tool_policies (
    user_id            text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    server_label       text NOT NULL REFERENCES mcp_servers (label) ON DELETE CASCADE,
    tool_name          text NOT NULL,
    policy             text NOT NULL CHECK (policy IN ('never', 'always', 'blocked')),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    granted_digest     text,
    granted_definition jsonb,
    PRIMARY KEY (user_id, server_label, tool_name)
);
CREATE INDEX user_tool_policies_server ON user_tool_policies (server_label, tool_name);

-- +goose Down
DROP TABLE user_tool_policies;
ALTER TABLE tool_policies DROP COLUMN granted_definition, DROP COLUMN granted_digest,
    DROP COLUMN updated_by_id, DROP COLUMN locked;
ALTER TABLE mcp_servers DROP COLUMN first_discovered_at, DROP COLUMN default_policy_locked;
UPDATE mcp_servers SET default_policy = 'always' WHERE default_policy = 'ask_unless_read_only';
ALTER TABLE mcp_servers DROP CONSTRAINT mcp_servers_default_policy_check;
ALTER TABLE mcp_servers ADD CONSTRAINT mcp_servers_default_policy_check
    CHECK (default_policy IN ('never', 'always', 'blocked'));
ALTER TABLE settings ADD COLUMN local_user text NOT NULL DEFAULT 'local';
ALTER TABLE settings DROP COLUMN default_policy_locked;
UPDATE settings SET default_policy = 'always' WHERE default_policy = 'ask_unless_read_only';
ALTER TABLE settings ALTER COLUMN default_policy SET DEFAULT 'never';
ALTER TABLE settings DROP CONSTRAINT settings_default_policy_check;
ALTER TABLE settings ADD CONSTRAINT settings_default_policy_check
    CHECK (default_policy IN ('never', 'always', 'blocked'));
ALTER TABLE approval_requests DROP COLUMN decided_by_id;
ALTER TABLE audit_log DROP COLUMN actor_id;
ALTER TABLE conversations DROP COLUMN owner_id;
DROP TABLE login_failures;
DROP TABLE one_time_tokens;
DROP TABLE api_tokens;
DROP TABLE sessions;
DROP TABLE users;
