-- Conversations: the transcript of every turn, the id of the last completed
-- upstream response (the next previous_response_id) and every approval
-- request with its decision. A page reload or a server restart reads all of
-- this back; nothing about a conversation lives only in memory.

-- +goose Up
CREATE TABLE conversations (
    id               text PRIMARY KEY,
    title            text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    -- The last response that completed upstream; follow-ups chain from it.
    last_response_id text,
    -- The turn streaming now, if any. Set and cleared in transactions that
    -- lock the row, so two turns of one conversation can never overlap.
    -- Cleared for every conversation when the API starts, since a turn
    -- cannot outlive the process that ran it.
    active_turn      text,
    active_turn_at   timestamptz
);
CREATE INDEX conversations_updated ON conversations (updated_at DESC, id DESC);

-- Every item of the transcript in order: the user's messages, each output
-- item of each response, and errors that ended a turn. data is json, not
-- jsonb: jsonb rejects the escape \u0000, which a model's text or a tool's
-- output may contain, and it would reorder the keys of tool arguments.
CREATE TABLE conversation_items (
    conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq             integer NOT NULL,
    type            text NOT NULL,
    item_id         text,
    response_id     text,
    data            json NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (conversation_id, seq)
);

CREATE TABLE approval_requests (
    -- The upstream mcp_approval_request item id (mcpr_...).
    id              text PRIMARY KEY,
    conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    response_id     text NOT NULL,
    server_label    text NOT NULL,
    -- The label upstream used; differs from server_label in the split layout.
    upstream_label  text NOT NULL,
    tool_name       text NOT NULL,
    -- Stored with secrets already redacted (mustRedacted in the turn engine):
    -- Toolgate never needs the originals, upstream keeps them.
    arguments       text NOT NULL,
    -- The tool's annotations when it asked, as the person saw them.
    annotations     jsonb NOT NULL DEFAULT '{}',
    -- Why it asked: tool, server or global policy, or unknown tool.
    reason_source   text NOT NULL,
    requested_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    state           text NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'approved', 'denied', 'superseded')),
    decided_at      timestamptz,
    decided_by      text,
    reason          text,
    scope           text CHECK (scope IN ('once', 'conversation')),
    remember        boolean NOT NULL DEFAULT false,
    -- The upstream response that carried the answer, once upstream has
    -- accepted it. An answer that got there is never sent as an approval
    -- again, so a decision is never applied twice.
    answered_in     text,
    CHECK ((state = 'pending') = (decided_at IS NULL))
);
CREATE INDEX approval_requests_conversation ON approval_requests (conversation_id, requested_at);

-- "Allow for this conversation": tools that run without asking in one
-- conversation only.
CREATE TABLE conversation_grants (
    conversation_id     text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    server_label        text NOT NULL,
    tool_name           text NOT NULL,
    approval_request_id text NOT NULL,
    granted_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (conversation_id, server_label, tool_name)
);

-- +goose Down
DROP TABLE conversation_grants;
DROP TABLE approval_requests;
DROP TABLE conversation_items;
DROP TABLE conversations;
