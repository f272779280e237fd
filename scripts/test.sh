#!/usr/bin/env bash
# Runs every test. Tests need Postgres: TEST_DATABASE_URL when set; otherwise
# the local server on 127.0.0.1:5432 when it answers; otherwise the tests
# start one with testcontainers (Docker), or fail saying how to provide one.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${TEST_DATABASE_URL:-}" ] && command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432; then
  export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
fi
echo "test database: ${TEST_DATABASE_URL:-testcontainers (Docker)}"

go test -race -count=1 ./...
