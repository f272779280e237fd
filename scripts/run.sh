#!/usr/bin/env bash
# Runs Toolgate on this machine against the local Postgres (DATABASE_URL),
# whose database is created on first start. With no OPENAI_API_KEY the API
# is offline: it starts the OpenAI Responses emulator and the demo MCP server
# in its own process and registers the demo server as "demo", so chatting
# works with no key and no network. It builds the web app (frontend/) and
# bin/toolgate with the app embedded (make build), which serves it at / from
# the same origin; what has not changed is not built again (scripts/web.sh
# keeps hashes of the app's sources, go build its cache). Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

# The web app first: bin/toolgate embeds it (scripts/build.sh prints its
# progress on a terminal).
echo "toolgate: building the web app, then bin/toolgate with the app inside (what changed only)…"
./scripts/web.sh
./scripts/build.sh
if [[ -z "${OPENAI_API_KEY:-}" ]]; then
  echo "toolgate: OFFLINE (no OPENAI_API_KEY): answers come from the built-in emulator, not a real model"
fi
echo "toolgate: starting on http://${LISTEN_ADDR:-127.0.0.1:8080}/ (API reference: docs/openapi.yaml, chat stream: docs/sse-events.md); open the sign-in or setup link it prints"
exec ./bin/toolgate
