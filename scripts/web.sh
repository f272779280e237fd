#!/usr/bin/env bash
# Builds the web app into frontend/dist, installing its npm packages first
# when they are missing or package-lock.json changed since the last install.
# Nothing is redone that has not changed: `npm ci` runs only when
# package-lock.json's content differs from the last install's (its hash is
# kept in node_modules/.toolgate-lock.sha256), and `vite build` only when
# the app's sources (src/, index.html, package.json, package-lock.json,
# vite.config.ts, tsconfig.json) or the built frontend/dist differ from the
# last build's (hashes kept in frontend/.web-build-stamp). FORCE_WEB_BUILD=1
# builds anyway.
#
#   ./scripts/web.sh              install if needed, build if needed
#   ./scripts/web.sh --deps-only  install if needed
#   ./scripts/web.sh --check      exit 0 when frontend/dist is up to date, 1 when a build is due
set -euo pipefail
cd "$(dirname "$0")/../frontend"

# sha256 of the given files' paths and contents (find's order, sorted).
hash_files() {
  LC_ALL=C sort -z | xargs -0 -r sha256sum | sha256sum | cut -d' ' -f1
}
inputs_hash() {
  { find src -type f -print0; printf '%s\0' index.html package.json package-lock.json vite.config.ts tsconfig.json; } | hash_files
}
dist_hash() {
  find dist -type f -print0 2>/dev/null | hash_files
}
# up_to_date: dist was built from these sources and has not changed since.
up_to_date() {
  [ -f dist/index.html ] && [ -f .web-build-stamp ] &&
    [ "$(cat .web-build-stamp)" = "inputs $(inputs_hash) dist $(dist_hash)" ]
}

if [ "${1:-}" = "--check" ]; then
  up_to_date
  exit
fi

if ! command -v npm >/dev/null; then
  echo "web: npm is missing: install Node.js 20.19+ (apt-get install -y nodejs npm), then run this again" >&2
  exit 1
fi
lock=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f node_modules/.package-lock.json ] || [ "$(cat node_modules/.toolgate-lock.sha256 2>/dev/null)" != "$lock" ]; then
  echo "web: installing the web app's npm packages (npm ci; the first install takes a minute or two)…"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock" > node_modules/.toolgate-lock.sha256
fi
if [ "${1:-}" != "--deps-only" ]; then
  if [ "${FORCE_WEB_BUILD:-}" != "1" ] && up_to_date; then
    echo "web: frontend/dist is up to date with the app's sources: not rebuilt"
    exit 0
  fi
  echo "web: building the web app (frontend/dist)…"
  rm -f .web-build-stamp
  npm run --silent build
  echo "inputs $(inputs_hash) dist $(dist_hash)" > .web-build-stamp
fi
