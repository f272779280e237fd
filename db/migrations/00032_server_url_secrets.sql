-- The query values of an MCP server's URL (?api_key=…, ?token=…) are
-- secrets like its header values: the whole URL is stored encrypted
-- (AES-256-GCM under SECRETS_KEY, bound to "url:" and the server's label) in
-- url_enc, and url keeps it with every query value replaced by ********
-- (what a person reading the table may see). A URL without a query is not
-- secret: url_enc is NULL and url is the URL. SQL does not have the key, so
-- the API encrypts the URLs stored in plain text by an older version when it
-- starts (postgres.SealHeaders), as it does header values (00004).

-- +goose Up
ALTER TABLE mcp_servers ADD COLUMN url_enc bytea;
COMMENT ON COLUMN mcp_servers.url_enc IS 'the URL, encrypted, when it has a query; url then has its query values masked';
-- A new query value changes url_enc only: replicas must read the server again.
DROP TRIGGER mcp_servers_policy_version_update ON mcp_servers;
CREATE CONSTRAINT TRIGGER mcp_servers_policy_version_update AFTER UPDATE ON mcp_servers
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN ((OLD.label, OLD.url, OLD.url_enc, OLD.description, OLD.headers_enc, OLD.default_policy, OLD.default_policy_locked, OLD.enabled,
           OLD.first_discovered_at, OLD.health_status, OLD.health_since, OLD.health_error, OLD.approval_ttl_seconds)
          IS DISTINCT FROM
          (NEW.label, NEW.url, NEW.url_enc, NEW.description, NEW.headers_enc, NEW.default_policy, NEW.default_policy_locked, NEW.enabled,
           NEW.first_discovered_at, NEW.health_status, NEW.health_since, NEW.health_error, NEW.approval_ttl_seconds))
    EXECUTE FUNCTION bump_policy_version();

-- +goose Down
-- The encrypted URLs cannot be decrypted here: a server whose URL had a
-- query keeps it masked and must be given its URL again.
DROP TRIGGER mcp_servers_policy_version_update ON mcp_servers;
CREATE CONSTRAINT TRIGGER mcp_servers_policy_version_update AFTER UPDATE ON mcp_servers
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN ((OLD.label, OLD.url, OLD.description, OLD.headers_enc, OLD.default_policy, OLD.default_policy_locked, OLD.enabled,
           OLD.first_discovered_at, OLD.health_status, OLD.health_since, OLD.health_error, OLD.approval_ttl_seconds)
          IS DISTINCT FROM
          (NEW.label, NEW.url, NEW.description, NEW.headers_enc, NEW.default_policy, NEW.default_policy_locked, NEW.enabled,
           NEW.first_discovered_at, NEW.health_status, NEW.health_since, NEW.health_error, NEW.approval_ttl_seconds))
    EXECUTE FUNCTION bump_policy_version();
ALTER TABLE mcp_servers DROP COLUMN url_enc;
