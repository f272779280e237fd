-- Every replica looks for pending approval requests older than APPROVAL_TTL
-- every few seconds (ExpiringConversations), and the metric
-- toolgate_approvals_pending counts them at every scrape: both read only the
-- pending ones, which a partial index keeps small however long the history.

-- +goose Up
CREATE INDEX approval_requests_pending ON approval_requests (requested_at) WHERE state = 'pending';

-- +goose Down
DROP INDEX approval_requests_pending;
