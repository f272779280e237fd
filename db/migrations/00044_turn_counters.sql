-- Issue 26 §2: turn starts without a queue. The per-user limits
-- (USER_MAX_CONCURRENT_TURNS, USER_MESSAGES_PER_MINUTE) were judged from a
-- count of the user's running conversations and of their messages in the
-- last minute, under a per-user advisory lock the starting transaction held
-- to its end: the starts of one user queued on it, and the count grew with
-- the load. Now each user has a row of counters that the statement opening a
-- turn reads and updates under the row's lock (held from that statement to
-- the COMMIT sent with it):
--
--   running      the user's conversations with a turn running, kept exact by
--                the triggers below on every change of conversations.active_turn
--                (a start, an end, a takeover, recovery's closing of a dead
--                replica's turn, a conversation deleted while running), whatever
--                statement makes it;
--   window_start, window_count
--                the user's messages in a fixed window of a minute that opens
--                at the first message after the previous window closed
--                (counted by the statement that opens a message's turn).

-- +goose Up
CREATE TABLE user_turn_counters (
    user_id      text PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    running      integer NOT NULL DEFAULT 0,
    window_start timestamptz,
    window_count integer NOT NULL DEFAULT 0
);

INSERT INTO user_turn_counters (user_id, running)
SELECT u.id, (SELECT count(*) FROM conversations c WHERE c.owner_id = u.id AND c.active_turn IS NOT NULL)
FROM users u;

-- +goose StatementBegin
CREATE FUNCTION user_turn_counters_running() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    was integer := 0;
    now_running integer := 0;
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.owner_id IS NOT NULL AND OLD.active_turn IS NOT NULL THEN
        was := 1;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.owner_id IS NOT NULL AND NEW.active_turn IS NOT NULL THEN
        now_running := 1;
    END IF;
    IF TG_OP = 'INSERT' AND NEW.owner_id IS NOT NULL THEN
        INSERT INTO user_turn_counters (user_id) VALUES (NEW.owner_id) ON CONFLICT (user_id) DO NOTHING;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.owner_id IS DISTINCT FROM NEW.owner_id THEN
        UPDATE user_turn_counters SET running = running - was WHERE user_id = OLD.owner_id AND was = 1;
        UPDATE user_turn_counters SET running = running + now_running WHERE user_id = NEW.owner_id AND now_running = 1;
    ELSIF now_running <> was THEN
        UPDATE user_turn_counters SET running = running + now_running - was
        WHERE user_id = coalesce(NEW.owner_id, OLD.owner_id);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER conversations_running_insert AFTER INSERT ON conversations
    FOR EACH ROW EXECUTE FUNCTION user_turn_counters_running();
CREATE TRIGGER conversations_running_update AFTER UPDATE OF active_turn, owner_id ON conversations
    FOR EACH ROW WHEN ((OLD.active_turn IS NULL) IS DISTINCT FROM (NEW.active_turn IS NULL) OR OLD.owner_id IS DISTINCT FROM NEW.owner_id)
    EXECUTE FUNCTION user_turn_counters_running();
CREATE TRIGGER conversations_running_delete AFTER DELETE ON conversations
    FOR EACH ROW WHEN (OLD.active_turn IS NOT NULL)
    EXECUTE FUNCTION user_turn_counters_running();

-- +goose StatementBegin
-- Raised by the statement that opens a turn when a per-user limit holds:
-- the transaction fails whole (the message, a new conversation, decisions
-- recorded with it are not kept), and detail says what was counted.
CREATE FUNCTION toolgate_turn_refused(detail json) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a per-user turn limit holds' USING ERRCODE = 'TG429', DETAIL = detail::text;
END $$;
-- +goose StatementEnd

-- The window counts of a user's messages were made over this index.
DROP INDEX conversation_items_user_messages;

-- +goose Down
CREATE INDEX conversation_items_user_messages ON conversation_items (created_at) WHERE type = 'user_message';
DROP TRIGGER conversations_running_insert ON conversations;
DROP TRIGGER conversations_running_update ON conversations;
DROP TRIGGER conversations_running_delete ON conversations;
DROP FUNCTION user_turn_counters_running();
DROP FUNCTION toolgate_turn_refused(json);
DROP TABLE user_turn_counters;
