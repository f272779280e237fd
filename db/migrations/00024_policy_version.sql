-- Issue 15 §3: replicas keep the workspace's tool policies in memory. A
-- turn reads policy_version (one row) and uses its copy only when it was
-- loaded at that version, else loads again: so a change is in force on
-- every replica as soon as it commits, whether or not the notification
-- arrived (it only warms the copies early).
--
-- The version is bumped by triggers, in the transaction of the change, for
-- every change to what grouping tools into requests reads: settings,
-- servers (except the columns only the API shows: check times, refresh
-- results, updated_at), discovered tools (when the definition, first-seen
-- or changed time differ), workspace tool policies and argument rules.
-- Personal policies and grants are per person and read with every turn,
-- so they do not bump it.
--
-- The triggers are deferred to commit and bump once per transaction: the
-- row is locked only for the last moment of a change, so two changes never
-- deadlock on it, and a transaction that touches a hundred tools bumps once.

-- +goose Up
CREATE TABLE policy_version (
    id         boolean PRIMARY KEY DEFAULT true CHECK (id),
    version    bigint NOT NULL DEFAULT 1,
    bumped_by  xid8 -- the transaction that bumped it last
);
INSERT INTO policy_version DEFAULT VALUES;

-- +goose StatementBegin
CREATE FUNCTION bump_policy_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE v bigint;
BEGIN
    UPDATE policy_version SET version = version + 1, bumped_by = pg_current_xact_id()
        WHERE bumped_by IS DISTINCT FROM pg_current_xact_id()
        RETURNING version INTO v;
    IF v IS NOT NULL THEN
        PERFORM pg_notify('toolgate_policy', v::text);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE CONSTRAINT TRIGGER settings_policy_version AFTER INSERT OR UPDATE OR DELETE ON settings
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_policy_version();
CREATE CONSTRAINT TRIGGER tool_policies_policy_version AFTER INSERT OR UPDATE OR DELETE ON tool_policies
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_policy_version();
CREATE CONSTRAINT TRIGGER approval_rules_policy_version AFTER INSERT OR UPDATE OR DELETE ON approval_rules
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_policy_version();
CREATE CONSTRAINT TRIGGER mcp_servers_policy_version AFTER INSERT OR DELETE ON mcp_servers
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_policy_version();
CREATE CONSTRAINT TRIGGER mcp_servers_policy_version_update AFTER UPDATE ON mcp_servers
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN ((OLD.label, OLD.url, OLD.description, OLD.headers_enc, OLD.default_policy, OLD.default_policy_locked, OLD.enabled,
           OLD.first_discovered_at, OLD.health_status, OLD.health_since, OLD.health_error, OLD.approval_ttl_seconds)
          IS DISTINCT FROM
          (NEW.label, NEW.url, NEW.description, NEW.headers_enc, NEW.default_policy, NEW.default_policy_locked, NEW.enabled,
           NEW.first_discovered_at, NEW.health_status, NEW.health_since, NEW.health_error, NEW.approval_ttl_seconds))
    EXECUTE FUNCTION bump_policy_version();
CREATE CONSTRAINT TRIGGER mcp_tools_policy_version AFTER INSERT OR DELETE ON mcp_tools
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_policy_version();
CREATE CONSTRAINT TRIGGER mcp_tools_policy_version_update AFTER UPDATE ON mcp_tools
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN ((OLD.server_label, OLD.name, OLD.digest, OLD.annotations, OLD.first_seen_at, OLD.definition_changed_at)
          IS DISTINCT FROM
          (NEW.server_label, NEW.name, NEW.digest, NEW.annotations, NEW.first_seen_at, NEW.definition_changed_at))
    EXECUTE FUNCTION bump_policy_version();
-- TRUNCATE fires no row triggers.
CREATE TRIGGER settings_policy_version_truncate AFTER TRUNCATE ON settings FOR EACH STATEMENT EXECUTE FUNCTION bump_policy_version();
CREATE TRIGGER tool_policies_policy_version_truncate AFTER TRUNCATE ON tool_policies FOR EACH STATEMENT EXECUTE FUNCTION bump_policy_version();
CREATE TRIGGER approval_rules_policy_version_truncate AFTER TRUNCATE ON approval_rules FOR EACH STATEMENT EXECUTE FUNCTION bump_policy_version();
CREATE TRIGGER mcp_servers_policy_version_truncate AFTER TRUNCATE ON mcp_servers FOR EACH STATEMENT EXECUTE FUNCTION bump_policy_version();
CREATE TRIGGER mcp_tools_policy_version_truncate AFTER TRUNCATE ON mcp_tools FOR EACH STATEMENT EXECUTE FUNCTION bump_policy_version();

-- +goose Down
DROP TRIGGER mcp_tools_policy_version_truncate ON mcp_tools;
DROP TRIGGER mcp_servers_policy_version_truncate ON mcp_servers;
DROP TRIGGER approval_rules_policy_version_truncate ON approval_rules;
DROP TRIGGER tool_policies_policy_version_truncate ON tool_policies;
DROP TRIGGER settings_policy_version_truncate ON settings;
DROP TRIGGER mcp_tools_policy_version_update ON mcp_tools;
DROP TRIGGER mcp_tools_policy_version ON mcp_tools;
DROP TRIGGER mcp_servers_policy_version_update ON mcp_servers;
DROP TRIGGER mcp_servers_policy_version ON mcp_servers;
DROP TRIGGER approval_rules_policy_version ON approval_rules;
DROP TRIGGER tool_policies_policy_version ON tool_policies;
DROP TRIGGER settings_policy_version ON settings;
DROP FUNCTION bump_policy_version();
DROP TABLE policy_version;
