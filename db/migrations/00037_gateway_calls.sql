-- Calls through Toolgate's MCP face (MCP_ROUTE=gateway): every tools/call
-- that reached /mcp/{server_label} has one row, its receipt at the call,
-- refusals included. A call that runs is written (state running) in the
-- transaction that uses its approval, before it is forwarded; its result is
-- stored with it once it comes back (done, failed, or not_run when it
-- provably never reached the server). A row left running means Toolgate
-- stopped between forwarding the call and storing its result: the only case
-- in which whether an approved call ran stays unknown.
--
-- Identical calls of one turn (same server, tool and arguments digest) are
-- one call: the partial unique index makes a provider's retry, or two copies
-- racing, find the first instead of running again. approval_request_id is
-- unique: an approval lets one call run, once.
--
-- conversation_id is plain text, not a foreign key: a receipt outlives its
-- conversation (as audit_log's do). arguments are the canonical arguments
-- with secrets hidden; result is json, not jsonb (a tool's output may hold
-- \u0000, which jsonb rejects).
--
-- approval_requests gains the digest of the real arguments the model asked
-- with and the definition digest of the tool when it asked: a call through
-- the face runs on an approval only when both still match. not_run is the
-- state of an approval whose call provably never ran.

-- +goose Up
CREATE TABLE gateway_calls (
    id                  text PRIMARY KEY,
    conversation_id     text NOT NULL,
    turn_id             text NOT NULL,
    server_label        text NOT NULL,
    tool_name           text NOT NULL,
    arguments           text NOT NULL,
    arguments_sha256    text NOT NULL,
    definition_digest   text,
    allowed_by          jsonb,
    approval_request_id text UNIQUE,
    state               text NOT NULL CHECK (state IN ('running', 'done', 'failed', 'refused', 'not_run')),
    result              json,
    is_error            boolean NOT NULL DEFAULT false,
    failure             text,
    output_sha256       text,
    refusal             jsonb,
    -- The provider's mcp_call item that reported the call, once it arrived.
    item_id             text,
    response_id         text,
    created_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at         timestamptz,
    CHECK ((state = 'refused') = (refusal IS NOT NULL)),
    CHECK ((state = 'running') = (finished_at IS NULL))
);
CREATE UNIQUE INDEX gateway_calls_once ON gateway_calls (conversation_id, turn_id, server_label, tool_name, arguments_sha256)
    WHERE state <> 'refused';
CREATE INDEX gateway_calls_conversation ON gateway_calls (conversation_id, created_at);

ALTER TABLE approval_requests
    ADD COLUMN arguments_sha256  text,
    ADD COLUMN definition_digest text,
    DROP CONSTRAINT approval_requests_state_check,
    ADD CONSTRAINT approval_requests_state_check
        CHECK (state IN ('pending', 'approved', 'denied', 'superseded', 'outcome_unknown', 'expired', 'not_run'));

-- +goose Down
ALTER TABLE approval_requests DROP CONSTRAINT approval_requests_state_check;
-- An approval that did not run could no longer be answered: expired says so.
UPDATE approval_requests SET state = 'expired' WHERE state = 'not_run';
ALTER TABLE approval_requests
    ADD CONSTRAINT approval_requests_state_check
        CHECK (state IN ('pending', 'approved', 'denied', 'superseded', 'outcome_unknown', 'expired')),
    DROP COLUMN definition_digest,
    DROP COLUMN arguments_sha256;
DROP TABLE gateway_calls;
