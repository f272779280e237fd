-- Issue 24 §4: open settings pages follow changes live (GET
-- /api/settings/events). Every change policy_version covers (00024: global
-- settings, workspace tool policies and locks, server defaults, argument
-- rules, servers, tools) is already notified on toolgate_policy with the new
-- version. These triggers notify the rest a settings page shows on
-- toolgate_settings, in the transaction of the change (delivered at commit,
-- never for a rollback), with a payload naming what changed:
--
--   personal <user_id>  that person's own tool policies (only their streams hear it)
--   card                a tool's approval card (text, choices)
--   decision_hook       a decision hook (admins' streams only)
--   webhook             a webhook (admins' streams only)
--   server              a server's result masking switch
--
-- No content rides along: a page reads what it shows through the API, as the
-- caller. Postgres folds identical notifications of one transaction into
-- one, so a transaction that touches a hundred rows notifies once.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION notify_settings_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_ARGV[0] <> 'personal' THEN
        PERFORM pg_notify('toolgate_settings', TG_ARGV[0]);
        RETURN NULL;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM pg_notify('toolgate_settings', 'personal ' || NEW.user_id);
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM pg_notify('toolgate_settings', 'personal ' || OLD.user_id);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER user_tool_policies_settings_notify AFTER INSERT OR UPDATE OR DELETE ON user_tool_policies
    FOR EACH ROW EXECUTE FUNCTION notify_settings_change('personal');
CREATE TRIGGER tool_approval_cards_settings_notify AFTER INSERT OR UPDATE OR DELETE ON tool_approval_cards
    FOR EACH STATEMENT EXECUTE FUNCTION notify_settings_change('card');
CREATE TRIGGER decision_hooks_settings_notify AFTER INSERT OR UPDATE OR DELETE ON decision_hooks
    FOR EACH STATEMENT EXECUTE FUNCTION notify_settings_change('decision_hook');
CREATE TRIGGER webhooks_settings_notify AFTER INSERT OR UPDATE OR DELETE ON webhooks
    FOR EACH STATEMENT EXECUTE FUNCTION notify_settings_change('webhook');
CREATE TRIGGER mcp_servers_settings_notify AFTER UPDATE ON mcp_servers
    FOR EACH ROW WHEN (OLD.mask_results IS DISTINCT FROM NEW.mask_results)
    EXECUTE FUNCTION notify_settings_change('server');

-- +goose Down
DROP TRIGGER mcp_servers_settings_notify ON mcp_servers;
DROP TRIGGER webhooks_settings_notify ON webhooks;
DROP TRIGGER decision_hooks_settings_notify ON decision_hooks;
DROP TRIGGER tool_approval_cards_settings_notify ON tool_approval_cards;
DROP TRIGGER user_tool_policies_settings_notify ON user_tool_policies;
DROP FUNCTION notify_settings_change();
