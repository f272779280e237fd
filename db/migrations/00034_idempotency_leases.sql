-- Idempotency keys whose request's replica died are not stuck in flight.
--
-- holder names the request that reserved the key (its replica and a random
-- part) and lease_expires_at how long it is held: the replica renews the
-- lease while the request runs (every third of TURN_LEASE_TTL). turn_id is
-- the turn the request started, written in the transaction that opens the
-- turn, and only while the holder still holds the key. A key in flight
-- whose lease ran out is settled by the next request with the key and the
-- same body: with no turn_id nothing ran, so the key is free again; with
-- one, once the turn ended (a takeover closes it), the key is answered from
-- the turn's stored events. Keys reserved before this migration have no
-- lease and stay in flight until they expire (24 hours).

-- +goose Up
ALTER TABLE idempotency_keys
    ADD COLUMN holder           text,
    ADD COLUMN lease_expires_at timestamptz,
    ADD COLUMN turn_id          text;

-- +goose Down
ALTER TABLE idempotency_keys
    DROP COLUMN holder,
    DROP COLUMN lease_expires_at,
    DROP COLUMN turn_id;
