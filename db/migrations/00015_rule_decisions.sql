-- What the argument rules made of an approval request (conversation.RuleCheck
-- as JSON): the rules checked, the one that held, and whether a rule (or,
-- with no rule holding, the tool's policy) answered it without a card.
-- NULL when no rules applied to the tool.

-- +goose Up
ALTER TABLE approval_requests ADD COLUMN rules jsonb;

-- +goose Down
ALTER TABLE approval_requests DROP COLUMN rules;
