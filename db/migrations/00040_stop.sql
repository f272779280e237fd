-- Issue 24 §2: stop. A person's decision with "stop": true denies its
-- request and every other pending request of the same response, and the
-- turn ends with no follow-up. The column marks the denials a stop made:
-- the reason the model gets with the next message says so, the card and
-- the transcript show it, and the audit counts stops apart from denials.

-- +goose Up
ALTER TABLE approval_requests ADD COLUMN stopped boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE approval_requests DROP COLUMN stopped;
