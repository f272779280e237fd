-- The per-user limits count a user's running turns and the messages they
-- sent in the last USER_MESSAGES_PER_MINUTE window at every turn start.
-- Without these the count read every conversation the user touched in the
-- last 11 minutes and all of its items, so a turn start of a busy user (an
-- API token with thousands of conversations) got slower with every
-- conversation; with them it reads the user's running conversations and
-- the messages inside the window.

-- +goose Up
CREATE INDEX conversations_owner_running ON conversations (owner_id) WHERE active_turn IS NOT NULL;
CREATE INDEX conversation_items_user_messages ON conversation_items (created_at) WHERE type = 'user_message';

-- +goose Down
DROP INDEX conversation_items_user_messages;
DROP INDEX conversations_owner_running;
