-- An admin's "ask for everything" switch: while it is on, every tool that
-- would run without asking asks (blocked tools stay blocked), whatever the
-- workspace or personal policies say. Turning it on or off is audited as a
-- settings change.

-- +goose Up
ALTER TABLE settings ADD COLUMN ask_everything boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE settings DROP COLUMN ask_everything;
