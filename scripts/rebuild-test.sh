#!/usr/bin/env bash
# Checks that `make run` does not rebuild what has not changed (run by
# scripts/test.sh, after scripts/web.sh built the app and scripts/build.sh
# built bin/toolgate):
#   - a second scripts/web.sh with no change does not run vite build
#     (frontend/dist stays as it was) and says so;
#   - a second scripts/build.sh makes the same bin/toolgate (same stamps,
#     so go build's cache has nothing to link);
#   - a changed source file, or a changed frontend/dist, makes the web app
#     due for a build again (checked on a copy, with scripts/web.sh --check).
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "rebuild-test: FAIL: $*" >&2; exit 1; }
mtime() { stat -c %Y.%y "$1"; }

./scripts/web.sh --check || fail "frontend/dist is not up to date after scripts/web.sh built it"
before=$(mtime frontend/dist/index.html)
out=$(./scripts/web.sh 2>&1)
echo "$out"
[[ $out == *"not rebuilt"* ]] || fail "a second scripts/web.sh with no change did not say it skipped the build"
[[ $out != *"building the web app"* ]] || fail "a second scripts/web.sh with no change built the web app again"
[ "$(mtime frontend/dist/index.html)" = "$before" ] || fail "a second scripts/web.sh with no change rewrote frontend/dist"

if [ -x bin/toolgate ]; then
  # go build touches an up-to-date binary: compare what is in it. A stamp
  # that changes at each build (a build date of "now") makes it differ,
  # and go build link it anew every time.
  before=$(sha256sum < bin/toolgate)
  sleep 1 # a date stamp of "now" would differ
  ./scripts/build.sh >/dev/null
  [ "$(sha256sum < bin/toolgate)" = "$before" ] || fail "a second scripts/build.sh with no change built a different bin/toolgate (a stamp changed)"
fi

# Change detection, on a copy (the sources here are left alone).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts"
cp scripts/web.sh "$tmp/scripts/"
tar -C frontend --exclude=./node_modules --exclude=./test-results --exclude=./playwright-report -cf - . | tar -C "$tmp" --one-top-level=frontend -xf -
ln -s "$PWD/frontend/node_modules" "$tmp/frontend/node_modules"
"$tmp/scripts/web.sh" --check || fail "a copy of the built app is not up to date"
main=$(find "$tmp/frontend/src" -name '*.tsx' -print -quit) # not | head: with pipefail, find's SIGPIPE fails the script
echo "// changed" >> "$main"
if "$tmp/scripts/web.sh" --check; then fail "a changed source file ($main) does not make the app due for a build"; fi
sed -i '$ d' "$main"
"$tmp/scripts/web.sh" --check || fail "the source file changed back, yet the app is due for a build"
echo "<!-- changed -->" >> "$tmp/frontend/dist/index.html"
if "$tmp/scripts/web.sh" --check; then fail "a changed frontend/dist does not make the app due for a build"; fi
echo "rebuild-test: ok (nothing rebuilt without a change; a change is noticed)"
