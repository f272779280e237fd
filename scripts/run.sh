#!/usr/bin/env bash
# Runs Toolgate on this machine: the demo MCP server and the offline OpenAI
# Responses emulator in the background and the API in the foreground, against
# the local Postgres (DATABASE_URL), whose database is created on first start.
# Ctrl-C stops all three.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${DEMO_MCP_ADDR:=127.0.0.1:8090}"
: "${EMULATOR_ADDR:=127.0.0.1:8091}"
mkdir -p bin
go build -o bin/ ./cmd/api ./cmd/demo-mcp ./cmd/emulator

pids=()
stop() { kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; }
trap stop EXIT INT TERM
./bin/demo-mcp -addr "$DEMO_MCP_ADDR" &
pids+=($!)
./bin/emulator -addr "$EMULATOR_ADDR" &
pids+=($!)

echo "toolgate: OpenAI Responses emulator at http://$EMULATOR_ADDR/v1/ (see docs/emulator.md)"

echo "toolgate: demo MCP server at http://$DEMO_MCP_ADDR/mcp; register it with:"
echo "  curl -X POST http://${LISTEN_ADDR:-127.0.0.1:8080}/api/mcp/servers -H 'Content-Type: application/json' -d '{\"label\":\"weather\",\"url\":\"http://$DEMO_MCP_ADDR/mcp\"}'"
./bin/api
