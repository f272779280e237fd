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

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
COPY --from=web /src/frontend/dist/ /usr/share/toolgate/web/
ENV LISTEN_ADDR=0.0.0.0:8080 WEB_DIR=/usr/share/toolgate/web
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/api"]
