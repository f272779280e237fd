#!/usr/bin/env bash
# Builds the Go binaries into bin/: toolgate, the one binary (the API, the
# migrate/version/chat/token commands, and the web app in frontend/dist
# embedded; see frontend/webapp.go), and the standalone demo MCP server and
# OpenAI Responses emulator. Build the web app first: `make build` runs
# scripts/web.sh and then this.
#
# toolgate's version is stamped with -ldflags: VERSION (default: git describe
# --always --dirty), COMMIT (git rev-parse HEAD) and BUILD_DATE (default: the
# time of the commit built, in UTC; from SOURCE_DATE_EPOCH when set; now
# outside a git checkout); `toolgate version` prints them. The stamps stay
# the same from one build of a tree to the next, so go build's cache finds
# nothing to do when nothing changed (a stamp of "now" relinked the binary at
# every `make run`). EXTRA_LDFLAGS are added (the Dockerfile strips the
# symbol tables with "-s -w"); go build also honours GOFLAGS and CGO_ENABLED.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f frontend/dist/index.html ]; then
  echo "build: frontend/dist has no built web app to embed: run ./scripts/web.sh first (make build does both)" >&2
  exit 1
fi

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

git_out() { git "$@" 2>/dev/null || true; }
version=${VERSION:-$(git_out describe --always --dirty)}
commit=${COMMIT:-$(git_out rev-parse HEAD)}
if [ -n "${BUILD_DATE:-}" ]; then
  date=$BUILD_DATE
elif [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
  date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
else
  date=$(TZ=UTC git_out log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)
  date=${date:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}
fi
for v in "$version" "$commit" "$date"; do
  if [[ ! $v =~ ^[[:alnum:]._:+/-]*$ ]]; then
    echo "build: refusing to stamp $v: only letters, digits and ._:+/- are allowed" >&2
    exit 1
  fi
done
version=${version:-dev}

mkdir -p bin
echo "build: bin/toolgate ${version} with the web app embedded (the first build downloads Go modules and takes a few minutes)…"
gobuild -tags webapp \
  -ldflags "-X main.version=$version -X main.commit=$commit -X main.date=$date ${EXTRA_LDFLAGS:-}" \
  -o bin/toolgate ./cmd/api
echo "build: bin/demo-mcp and bin/emulator…"
gobuild -o bin/ ./cmd/demo-mcp ./cmd/emulator
