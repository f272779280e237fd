# Builds Toolgate's one binary, bin/toolgate, with the web app embedded
# (frontend/webapp.go) and its version stamped (scripts/build.sh), plus the
# standalone demo MCP server and OpenAI Responses emulator for compose.
# The build context has no .git (.dockerignore), so pass the version:
#
#   docker build -t toolgate \
#     --build-arg VERSION="$(git describe --always --dirty)" \
#     --build-arg REVISION="$(git rev-parse HEAD)" \
#     --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" .
FROM node:22-bookworm-slim AS web
WORKDIR /src/frontend
COPY frontend/package.json frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY frontend/ ./
RUN npm run build

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
COPY --from=web /src/frontend/dist/ frontend/dist/
ARG VERSION REVISION CREATED
RUN CGO_ENABLED=0 GOFLAGS=-trimpath EXTRA_LDFLAGS="-s -w" COMMIT="$REVISION" BUILD_DATE="$CREATED" ./scripts/build.sh
RUN mkdir -p /data/toolgate

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev REVISION CREATED
LABEL org.opencontainers.image.title="Toolgate" \
      org.opencontainers.image.description="Puts a person in control of the MCP tools an OpenAI Responses model may run: approval policies, and a chat that asks before a tool runs" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.created="$CREATED" \
      org.opencontainers.image.source="https://github.com/toolgate/toolgate" \
      org.opencontainers.image.licenses="LicenseRef-Proprietary"
COPY --from=build /src/bin/toolgate /src/bin/demo-mcp /src/bin/emulator /usr/local/bin/
# Offline without SECRETS_KEY, the key that encrypts stored header secrets is
# created here on first run; mount a volume so it lives as long as the database.
COPY --from=build --chown=65532:65532 /data/ /var/lib/
ENV SECRETS_KEY_FILE=/var/lib/toolgate/secrets.key
# Inside the container Toolgate listens on every interface (the port is
# published by Docker), so LISTEN_ADDR names no host a browser uses: the API
# answers only to the Host names in ALLOWED_HOSTS (others get 421), which
# stops DNS rebinding. Behind a proxy or under a real name, set
# ALLOWED_HOSTS=toolgate.example.com (comma-separated). The web app is in the
# binary; WEB_DIR would serve one from a mounted directory instead.
ENV LISTEN_ADDR=0.0.0.0:8080 ALLOWED_HOSTS=localhost,127.0.0.1
EXPOSE 8080
# The image has no curl: the binary checks itself (GET /healthz on
# LISTEN_ADDR's port over loopback; exit 0 or 1).
HEALTHCHECK --interval=10s --timeout=6s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/toolgate", "healthcheck"]
# No command: serve; `docker run IMAGE migrate status` runs another.
ENTRYPOINT ["/usr/local/bin/toolgate"]
