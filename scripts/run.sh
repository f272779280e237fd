#!/usr/bin/env bash
# Runs Toolgate on this machine: the demo MCP server in the background and the
# API in the foreground, against the local Postgres (DATABASE_URL), whose
# database is created on first start. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${DEMO_MCP_ADDR:=127.0.0.1:8090}"
mkdir -p bin
go build -o bin/ ./cmd/api ./cmd/demo-mcp

./bin/demo-mcp -addr "$DEMO_MCP_ADDR" &
demo_pid=$!
trap 'kill "$demo_pid" 2>/dev/null || true; wait "$demo_pid" 2>/dev/null || true' EXIT INT TERM

echo "toolgate: demo MCP server at http://$DEMO_MCP_ADDR/mcp; register it with:"
echo "  curl -X POST http://${LISTEN_ADDR:-127.0.0.1:8080}/api/mcp/servers -H 'Content-Type: application/json' -d '{\"label\":\"weather\",\"url\":\"http://$DEMO_MCP_ADDR/mcp\"}'"
./bin/api
