-- Outbound webhooks: an admin registers a URL and the events it wants
-- (approval.required, decision.recorded). Deliveries are a transactional
-- outbox: AppendEvents inserts one row per enabled webhook in the same
-- statement that stores the event, so an event is never announced without
-- its deliveries, nor the other way round; every replica's dispatcher then
-- claims due rows (FOR UPDATE SKIP LOCKED plus a lease, so two replicas
-- never send the same attempt and a replica that dies mid-send loses
-- nothing: its lease runs out and another sends again).

-- +goose Up
CREATE TABLE webhooks (
    id          text PRIMARY KEY,
    url         text NOT NULL,
    description text NOT NULL DEFAULT '',
    events      text[] NOT NULL,
    -- The signing secret, AES-GCM under SECRETS_KEY (like MCP headers),
    -- bound to the id: HMAC needs the secret itself, so it cannot be hashed.
    secret_enc  bytea NOT NULL,
    enabled     boolean NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
    id                 text PRIMARY KEY,
    webhook_id         text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event              text NOT NULL,
    -- No foreign key: a delivery outlives a conversation deleted meanwhile.
    conversation_id    text NOT NULL DEFAULT '',
    conversation_title text NOT NULL DEFAULT '',
    event_id           bigint,
    data               jsonb NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    state              text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts           integer NOT NULL DEFAULT 0,
    next_attempt_at    timestamptz DEFAULT clock_timestamp(),
    lease_owner        text,
    lease_expires_at   timestamptz,
    last_status        integer,
    last_error         text,
    last_latency_ms    integer,
    delivered_at       timestamptz,
    UNIQUE (webhook_id, conversation_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, created_at DESC);

CREATE TABLE webhook_attempts (
    delivery_id text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt     integer NOT NULL,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    status      integer,
    error       text,
    latency_ms  integer NOT NULL DEFAULT 0,
    PRIMARY KEY (delivery_id, attempt)
);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
