-- Issue 26: a turn's end in fewer round trips. A turn ending checked first,
-- in a statement of its own, that it still ran in its conversation (a
-- replica that lost its lease must not write over the takeover's), and
-- only then sent its writes. This function makes the check a statement
-- that can go in one batch with them: it locks the conversation's row and
-- raises TG409 when the turn no longer runs there (or the conversation is
-- gone), which aborts the transaction before anything after it is written,
-- the COMMIT included.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION toolgate_turn_still_runs(conv text, turn text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM conversations WHERE id = conv AND active_turn = turn FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the turn no longer runs in its conversation' USING ERRCODE = 'TG409';
    END IF;
    RETURN true;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION toolgate_turn_still_runs(text, text);
