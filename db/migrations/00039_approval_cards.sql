-- Issue 24 §5: words and choices per tool. An admin gives a tool an
-- approval text ("Run shell command: {command}") and may limit the choices
-- its card offers. Kept apart from tool_policies: clearing or deleting a
-- tool's policy must not take its words with it, and a tool may have words
-- without a policy.
--
-- approval_requests keeps what the card showed when it asked: the text
-- rendered from the (redacted) arguments and the choices then in force. The
-- decision API reads the tool's choices again when the person decides
-- (403 choice_not_allowed), as it does with a lock at Ask.

-- +goose Up
CREATE TABLE tool_approval_cards (
    server_label  text NOT NULL REFERENCES mcp_servers (label) ON DELETE CASCADE,
    tool_name     text NOT NULL,
    approval_text text CHECK (char_length(approval_text) <= 500),
    -- NULL: every choice.
    choices       text[] CHECK (choices <@ ARRAY['approve_once', 'approve_conversation', 'approve_hour',
                                                'remember', 'deny', 'deny_with_correction']),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    updated_by    text NOT NULL,
    PRIMARY KEY (server_label, tool_name)
);

ALTER TABLE approval_requests ADD COLUMN approval_text text, ADD COLUMN choices text[];

-- +goose Down
ALTER TABLE approval_requests DROP COLUMN approval_text, DROP COLUMN choices;
DROP TABLE tool_approval_cards;
