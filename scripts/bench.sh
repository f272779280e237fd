#!/usr/bin/env bash
# Measures Toolgate beside a plain Go reverse proxy and a direct connection
# against a mock Responses upstream (cmd/bench; "Performance" in
# docs/operations.md explains each row). Not part of `make test`: it takes a few
# minutes and its figures depend on the machine. Arguments go to the bench
# (`./scripts/bench.sh -quick`, `-streams 50,200`, `-runs 1`, `-h` for all);
# results are printed and written to bench-results.json.
#
# Needs Postgres (TEST_DATABASE_URL, or the local server on 127.0.0.1:5432;
# the bench creates and drops a database of its own). bin/toolgate
# is built first: by scripts/build.sh when the web app is built, otherwise
# without the app (the bench does not use it).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${TEST_DATABASE_URL:-}" ] && command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432; then
  export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
fi
if [ -f frontend/dist/index.html ]; then
  ./scripts/build.sh
else
  echo "bench: building bin/toolgate without the web app (frontend/dist is not built)"
  mkdir -p bin
  go build -o bin/toolgate ./cmd/api
fi
go build -o bin/bench ./cmd/bench
exec ./bin/bench "$@"
