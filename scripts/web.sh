#!/usr/bin/env bash
# Builds the web app into frontend/dist, installing its npm packages first
# when they are missing or package-lock.json changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/../frontend"

if ! command -v npm >/dev/null; then
  echo "web: npm is missing: install Node.js 20.19+ (apt-get install -y nodejs npm), then run this again" >&2
  exit 1
fi
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "web: installing the web app's npm packages (npm ci; the first install takes a minute or two)…"
  npm ci --no-audit --no-fund --loglevel=error
fi
if [ "${1:-}" != "--deps-only" ]; then
  echo "web: building the web app (frontend/dist)…"
  npm run --silent build
fi
