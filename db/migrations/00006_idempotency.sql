-- Idempotency keys of the chat routes (POST /api/responses and
-- POST /api/responses/approval-response): per user, the first request with
-- a key runs and its stream is kept here; a repeat with the same key and
-- the same body gets that stream again instead of a new turn. Rows expire
-- 24 hours after created_at (deleted when a new key is written).

-- +goose Up
CREATE TABLE idempotency_keys (
    user_id         text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key             text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    -- SHA-256 of the route and the request body (canonical JSON): a repeat
    -- with another body is refused.
    request_hash    bytea NOT NULL,
    -- in_flight: the first request still runs (or was cut off with its
    -- server); done: events holds its stream.
    state           text NOT NULL CHECK (state IN ('in_flight', 'done')),
    conversation_id text,
    -- The stream's events as [{"event": name, "data": payload}, ...];
    -- json, not jsonb, so the payloads replay byte for byte.
    events          json,
    created_at      timestamptz NOT NULL DEFAULT now(),
    completed_at    timestamptz,
    PRIMARY KEY (user_id, key),
    CHECK ((state = 'done') = (events IS NOT NULL))
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
