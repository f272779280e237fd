-- Deny with a correction: a denial may carry the arguments the person wants
-- used instead (correction, as they gave it: "[redacted]" where they kept a
-- hidden value), and the request the model then makes carries what changed
-- since (corrects: the denied request's id, the argument changes, whether it
-- matches the correction), worked out once when it arrives.

-- +goose Up
ALTER TABLE approval_requests ADD COLUMN correction jsonb;
ALTER TABLE approval_requests ADD COLUMN corrects jsonb;

-- +goose Down
ALTER TABLE approval_requests DROP COLUMN corrects, DROP COLUMN correction;
