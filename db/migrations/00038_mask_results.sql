-- Issue 24 §7: Toolgate's MCP face masks secret-looking values in a tool's
-- result before the provider (and so the model) reads it; an admin can turn
-- that off for a server whose results must pass untouched
-- (mask_results false). Every existing server masks from now on.
--
-- Only the face reads mask_results, from the server's row at each call:
-- grouping tools into requests does not, so it bumps no policy version
-- (00024).
--
-- gateway_calls.masked is how many values the face masked in the call's
-- result; null when it did not check it (refused, or mask_results off).

-- +goose Up
ALTER TABLE mcp_servers ADD COLUMN mask_results boolean NOT NULL DEFAULT true;
ALTER TABLE gateway_calls ADD COLUMN masked integer CHECK (masked >= 0);

-- +goose Down
ALTER TABLE gateway_calls DROP COLUMN masked;
ALTER TABLE mcp_servers DROP COLUMN mask_results;
