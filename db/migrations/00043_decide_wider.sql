-- Issue 24 §3: decide wider from the card. An admin's approval can say
-- "for every tool of this server" (scope server) or "for everything"
-- (scope everything): the request is approved and a workspace default
-- changes in the same transaction. The request keeps the scope it was
-- decided with.

-- +goose Up
ALTER TABLE approval_requests DROP CONSTRAINT approval_requests_scope_check;
ALTER TABLE approval_requests ADD CONSTRAINT approval_requests_scope_check
    CHECK (scope IN ('once', 'conversation', 'hour', 'server', 'everything'));

-- +goose Down
-- The default those decisions changed stays; the requests read as approved once.
UPDATE approval_requests SET scope = 'once' WHERE scope IN ('server', 'everything');
ALTER TABLE approval_requests DROP CONSTRAINT approval_requests_scope_check;
ALTER TABLE approval_requests ADD CONSTRAINT approval_requests_scope_check
    CHECK (scope IN ('once', 'conversation', 'hour'));
