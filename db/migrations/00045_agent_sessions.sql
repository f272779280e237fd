-- Issue 27: the MCP face for any MCP client. A person's agent (Claude Code,
-- Codex, Cursor, VS Code, the OpenAI Agents SDK, their own app) reaches
-- /mcp and /mcp/{server_label} with the person's API token (tg_…). Each MCP
-- session of such a client is a conversation of kind 'agent', owned by the
-- person, holding what a chat holds for the same purposes:
--
--   * its held calls are approval requests of it (sent_in_turn is the call's
--     own id, so an approval lets exactly that call run, once);
--   * "approve for this session" is a conversation grant on it;
--   * its receipts are gateway_calls rows (turn_id is the call's id);
--   * its approval.required and decision.recorded events are conversation
--     events, so webhooks, the inbox's stream and the audit log see them.
--
-- client is the MCP clientInfo the session initialized with ({"name",
-- "version", "title"}), as the client said it: a name for people, not an
-- identity. A receipt copies it (gateway_calls.client). A held call whose
-- client went away before a decision is withdrawn: nothing runs later.
--
-- held_until is the lease of the replica holding a call open: it renews it
-- while it waits. Past it (that replica stopped, or lost the database), no
-- one waits for the decision any more: the sweep withdraws the request, and
-- a decision on it is refused, so that no card asks for a call that cannot
-- run.

-- +goose Up
ALTER TABLE conversations
    ADD COLUMN kind text NOT NULL DEFAULT 'chat' CHECK (kind IN ('chat', 'agent')),
    ADD COLUMN client jsonb;
ALTER TABLE gateway_calls ADD COLUMN client jsonb;
ALTER TABLE approval_requests
    ADD COLUMN held_until timestamptz,
    DROP CONSTRAINT approval_requests_state_check,
    ADD CONSTRAINT approval_requests_state_check
        CHECK (state IN ('pending', 'approved', 'denied', 'superseded', 'outcome_unknown', 'expired', 'not_run', 'withdrawn'));
-- The inbox: what waits for a person, across their chats and agents.
CREATE INDEX conversations_owner_kind ON conversations (owner_id, kind);

-- +goose Down
DROP INDEX conversations_owner_kind;
UPDATE approval_requests SET state = 'superseded' WHERE state = 'withdrawn';
ALTER TABLE approval_requests
    DROP COLUMN held_until,
    DROP CONSTRAINT approval_requests_state_check,
    ADD CONSTRAINT approval_requests_state_check
        CHECK (state IN ('pending', 'approved', 'denied', 'superseded', 'outcome_unknown', 'expired', 'not_run'));
ALTER TABLE gateway_calls DROP COLUMN client;
ALTER TABLE conversations DROP COLUMN client, DROP COLUMN kind;
