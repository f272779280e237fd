-- An approval request can expire: the model's provider lost the response
-- that asked (previous_response_not_found, e.g. after its retention period),
-- so no answer can reach it any more. The state is also named in 00007,
-- which widens the same CHECK with outcome_unknown and expired; this
-- migration sets the same list under the same name, so it gives the same
-- result whether or not 00007 ran before it.

-- +goose Up
ALTER TABLE approval_requests DROP CONSTRAINT IF EXISTS approval_requests_state_check;
ALTER TABLE approval_requests ADD CONSTRAINT approval_requests_state_check
    CHECK (state IN ('pending', 'approved', 'denied', 'superseded', 'outcome_unknown', 'expired'));

-- +goose Down
-- Nothing: 00007 allows the same states, and narrowing the CHECK would fail
-- on rows that already use them.
SELECT 1;
