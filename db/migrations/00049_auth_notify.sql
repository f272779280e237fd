-- Issue 26: a signed-in request without a round trip. Each replica keeps the
-- sessions and personal API tokens it has read in memory
-- (auth.CredentialCache) and must hear at once of every change that could
-- end one, whoever makes it: another replica, a sweeper, an operator in
-- psql. These triggers notify toolgate_auth in the transaction of the change
-- (delivered at commit, never for a rollback):
--
--   s <hex of token_hash>  a session was updated (last_seen_at) or deleted
--   t <hex of token_hash>  a personal API token was updated (last_used_at)
--                          or deleted
--   u <user id>            a user was updated (role, disabled, password,
--                          email, sign-in) or deleted
--   *                      sessions, tokens or users were truncated: drop
--                          everything
--
-- Deleting a user deletes its sessions and tokens (ON DELETE CASCADE), which
-- notifies each of them too. No secret rides along: the payload names a hash that is
-- stored already, and only replicas listening on the database hear it.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION notify_auth_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_LEVEL = 'STATEMENT' THEN
        PERFORM pg_notify('toolgate_auth', '*');
    ELSIF TG_TABLE_NAME = 'sessions' THEN
        PERFORM pg_notify('toolgate_auth', 's ' || encode(OLD.token_hash, 'hex'));
    ELSIF TG_TABLE_NAME = 'api_tokens' THEN
        PERFORM pg_notify('toolgate_auth', 't ' || encode(OLD.token_hash, 'hex'));
    ELSE
        PERFORM pg_notify('toolgate_auth', 'u ' || OLD.id);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER sessions_auth_notify AFTER UPDATE OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION notify_auth_change();
CREATE TRIGGER sessions_auth_notify_truncate AFTER TRUNCATE ON sessions
    FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_change();
CREATE TRIGGER api_tokens_auth_notify AFTER UPDATE OR DELETE ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION notify_auth_change();
CREATE TRIGGER api_tokens_auth_notify_truncate AFTER TRUNCATE ON api_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_change();
CREATE TRIGGER users_auth_notify AFTER UPDATE OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION notify_auth_change();
CREATE TRIGGER users_auth_notify_truncate AFTER TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_change();

-- +goose Down
DROP TRIGGER users_auth_notify_truncate ON users;
DROP TRIGGER users_auth_notify ON users;
DROP TRIGGER api_tokens_auth_notify_truncate ON api_tokens;
DROP TRIGGER api_tokens_auth_notify ON api_tokens;
DROP TRIGGER sessions_auth_notify_truncate ON sessions;
DROP TRIGGER sessions_auth_notify ON sessions;
DROP FUNCTION notify_auth_change();
