-- Issue 26 §2: no per-turn work that grows with the history. A turn's start
-- deletes the text deltas of the turns before it (every message they sent
-- is an item by then). Through the primary key (conversation_id, id) that
-- delete read every event the conversation ever stored, and the other
-- events stay, so each turn read more than the last. This partial index
-- holds only deltas: the delete reads the few it removes.

-- +goose Up
CREATE INDEX conversation_events_deltas ON conversation_events (conversation_id) WHERE event = 'text.delta';

-- +goose Down
DROP INDEX conversation_events_deltas;
