-- An approval request records the admin's lock at Ask that made its tool
-- ask, if any: the level of the locked setting (tool, server, global). The
-- card shows the lock and offers only what it allows (approve once, deny);
-- the decision API refuses a grant or a remembered approval for a locked
-- tool either way (403 policy_locked), reading the lock again when the
-- person decides.

-- +goose Up
ALTER TABLE approval_requests ADD COLUMN ask_lock text
    CHECK (ask_lock IN ('tool', 'server', 'global'));

-- +goose Down
ALTER TABLE approval_requests DROP COLUMN ask_lock;
