#!/usr/bin/env bash
# Runs every test: golangci-lint and the Go tests, then the web app's
# generated-client check (src/api/schema.d.ts matches docs/openapi.yaml), type
# check, ESLint and component tests (Vitest), then the end-to-end tests in real
# Chromium against the real binary. Tests need Postgres: TEST_DATABASE_URL when set; otherwise the
# local server on 127.0.0.1:5432 when it answers; otherwise the Go tests start
# one with testcontainers (Docker), or fail saying how to provide one. The
# browser tests need Chromium at /usr/bin/chromium (apt-get install -y chromium),
# the replica test (test/replicas) HAProxy (apt-get install -y haproxy).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${TEST_DATABASE_URL:-}" ] && command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432; then
  export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
fi
echo "test database: ${TEST_DATABASE_URL:-testcontainers (Docker)}"

# golangci-lint (config: .golangci.yml), pinned and installed once into
# bin/tools through the Go module proxy; a finding fails the run.
golangci_lint_version=v2.15.0
golangci_lint=bin/tools/golangci-lint
if [ "$("$golangci_lint" version --short 2>/dev/null)" != "${golangci_lint_version#v}" ]; then
  echo "== installing golangci-lint $golangci_lint_version into $golangci_lint (once; about 3 minutes)"
  GOBIN="$PWD/bin/tools" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$golangci_lint_version"
fi
echo "== golangci-lint"
"$golangci_lint" run ./...

# The npm packages first: Go tests run third-party MCP clients (the MCP
# TypeScript SDK, the OpenAI Agents SDK) from frontend/node_modules against
# Toolgate's MCP face.
echo "== npm packages"
./scripts/web.sh --deps-only

echo "== go test"
go test -race -count=1 ./...
# The race detector inflates stacks and heap: the per-stream memory bound
# (64 KiB) is asserted once more in a normal build.
echo "== go test (stream memory, without -race)"
go test -count=1 -run 'TestRun_Open.*StreamsCostLittle' ./cmd/api/

echo "== web app: type check, component tests, build"
./scripts/web.sh --deps-only
(cd frontend && npm run --silent check:api && npm run --silent typecheck && npm run --silent lint && npx vitest run)
./scripts/web.sh

echo "== end-to-end in Chromium (screenshots: frontend/test-results/e2e/)"
# bin/toolgate embeds the app just built, stamped as make build stamps it;
# @playwright/test (frontend/playwright.config.ts, frontend/e2e/README.md)
# starts it per test on a fresh database.
./scripts/build.sh
echo "== make run rebuilds nothing that has not changed"
./scripts/rebuild-test.sh
(cd frontend && npm run --silent e2e)
