#!/usr/bin/env bash
# Runs Toolgate on this machine against the local Postgres (DATABASE_URL),
# whose database is created on first start. With no OPENAI_API_KEY the API
# is offline: it starts the OpenAI Responses emulator and the demo MCP server
# in its own process and registers the demo server as "demo", so chatting
# works with no key and no network. It builds the web app (frontend/) and
# serves it at / from the same origin. Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

# gobuild runs go build and, on a terminal, keeps one line up to date with
# what it is doing (the first build downloads modules and compiles a few
# hundred packages: minutes of silence otherwise). Elsewhere (CI, a pipe) it
# is plain go build. On failure it prints the errors, not the package list.
gobuild() {
  if [ ! -t 1 ]; then
    go build "$@"
    return
  fi
  local log cols n=0 line msg
  log=$(mktemp)
  cols=$(tput cols 2>/dev/null || echo 80)
  if ! go build -v "$@" 2>&1 | tee "$log" | while IFS= read -r line; do
    if [[ $line == "go: downloading "* ]]; then
      msg="  downloading ${line#go: downloading }"
    elif [[ $line =~ ^[[:alnum:]._~/-]+$ ]]; then
      n=$((n + 1)) msg="  compiled $n packages: $line"
    else
      continue # an error: printed in full below
    fi
    printf '\r\033[K%s' "${msg:0:$((cols - 1))}"
  done; then
    printf '\r\033[K'
    grep -Ev '^[[:alnum:]._~/-]+$|^go: downloading ' "$log" >&2 || true
    rm -f "$log"
    return 1
  fi
  printf '\r\033[K'
  rm -f "$log"
}

mkdir -p bin
echo "toolgate: building the API (the first build downloads Go modules and takes a few minutes)…"
gobuild -o bin/ ./cmd/api ./cmd/demo-mcp ./cmd/emulator
./scripts/web.sh
if [[ -z "${OPENAI_API_KEY:-}" ]]; then
  echo "toolgate: OFFLINE (no OPENAI_API_KEY): answers come from the built-in emulator, not a real model"
fi
echo "toolgate: starting on http://${LISTEN_ADDR:-127.0.0.1:8080}/ (API reference: docs/openapi.yaml, chat stream: docs/sse-events.md); open the sign-in or setup link it prints"
exec ./bin/api
