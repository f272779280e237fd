-- Replicas: several API processes on one database.
--
-- Leases: the replica running a turn holds it (lease_owner) until
-- lease_expires_at and renews it while the turn runs. A start no longer
-- clears every turn: a lease that expired (its replica crashed or lost the
-- database) is taken over by any replica, which closes the turn as
-- interrupted. Turns started by an older Toolgate have no lease owner and
-- count as expired.
--
-- Events: every server-sent event of a conversation, numbered per
-- conversation (event_seq is the last number given), so a stream can be
-- resumed after Last-Event-ID from any replica. Numbers are given under the
-- conversation row's lock, so they commit in order.
--
-- Delivery: sent_in_turn is written in the transaction that claims the turn,
-- before the follow-up carrying the answer leaves. An answer that may have
-- been sent is never sent as an approval again; if the outcome stays
-- unknown, the approval's state becomes outcome_unknown (the tool may have
-- run). expired: the request can no longer be answered.

-- +goose Up
ALTER TABLE conversations
    ADD COLUMN lease_owner      text,
    ADD COLUMN lease_expires_at timestamptz,
    ADD COLUMN event_seq        bigint NOT NULL DEFAULT 0;
CREATE INDEX conversations_running ON conversations (lease_expires_at) WHERE active_turn IS NOT NULL;

CREATE TABLE conversation_events (
    conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    id              bigint NOT NULL,
    turn_id         text,
    event           text NOT NULL,
    -- json, not jsonb, for the same reason as conversation_items.data.
    data            json NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (conversation_id, id)
);

ALTER TABLE approval_requests
    ADD COLUMN sent_in_turn text,
    DROP CONSTRAINT approval_requests_state_check,
    ADD CONSTRAINT approval_requests_state_check
        CHECK (state IN ('pending', 'approved', 'denied', 'superseded', 'outcome_unknown', 'expired'));

-- +goose Down
ALTER TABLE approval_requests
    DROP CONSTRAINT approval_requests_state_check,
    DROP COLUMN sent_in_turn;
UPDATE approval_requests SET state = 'superseded' WHERE state IN ('outcome_unknown', 'expired');
ALTER TABLE approval_requests
    ADD CONSTRAINT approval_requests_state_check
        CHECK (state IN ('pending', 'approved', 'denied', 'superseded'));
DROP TABLE conversation_events;
DROP INDEX conversations_running;
ALTER TABLE conversations DROP COLUMN lease_owner, DROP COLUMN lease_expires_at, DROP COLUMN event_seq;
