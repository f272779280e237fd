# Builds the web app and the binaries: the API (default command, serving the
# app at /), the demo MCP server and the offline OpenAI Responses emulator.
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
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/api ./cmd/demo-mcp ./cmd/emulator
RUN mkdir -p /data/toolgate

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
COPY --from=web /src/frontend/dist/ /usr/share/toolgate/web/
# Offline without SECRETS_KEY, the key that encrypts stored header secrets is
# created here on first run; mount a volume so it lives as long as the database.
COPY --from=build --chown=65532:65532 /data/ /var/lib/
ENV SECRETS_KEY_FILE=/var/lib/toolgate/secrets.key
# Inside the container Toolgate listens on every interface (the port is
# published by Docker), so LISTEN_ADDR names no host a browser uses: the API
# answers only to the Host names in ALLOWED_HOSTS (others get 421), which
# stops DNS rebinding. Behind a proxy or under a real name, set
# ALLOWED_HOSTS=toolgate.example.com (comma-separated).
ENV LISTEN_ADDR=0.0.0.0:8080 ALLOWED_HOSTS=localhost,127.0.0.1 WEB_DIR=/usr/share/toolgate/web
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/api"]
