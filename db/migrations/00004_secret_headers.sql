-- MCP server header values are secrets: they are stored encrypted
-- (AES-256-GCM under SECRETS_KEY, bound to the server's label) in
-- headers_enc as nonce || ciphertext of the JSON object of headers. SQL does
-- not have the key, so the API moves existing plaintext values into
-- headers_enc when it starts (postgres.SealHeaders) and empties the old
-- headers column, which nothing writes any more.

-- +goose Up
ALTER TABLE mcp_servers ADD COLUMN headers_enc bytea;
COMMENT ON COLUMN mcp_servers.headers IS 'unused: plaintext headers from before 00004, moved to headers_enc at start';

-- +goose Down
-- The encrypted values cannot be decrypted here: header secrets are lost
-- and must be entered again.
ALTER TABLE mcp_servers DROP COLUMN headers_enc;
COMMENT ON COLUMN mcp_servers.headers IS NULL;
