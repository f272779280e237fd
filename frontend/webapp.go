// Package frontend holds the built web app for the Go binary.
//
// How the app gets into bin/toolgate: `make build` (scripts/web.sh, then
// scripts/build.sh) builds the app into frontend/dist and then compiles
// cmd/api with the build tag "webapp", which adds webapp_embed.go: its
// //go:embed copies frontend/dist into the binary, so a copied binary serves
// the app from any directory. Go's embed patterns cannot reach a parent
// directory, which is why this tiny package lives next to dist.
//
// Why a build tag: frontend/dist is build output (gitignored, emptied by
// every vite build), so on a clean clone it does not exist, and a
// //go:embed of a missing directory is a compile error. Without the tag
// (go vet ./..., go test ./..., golangci-lint, a plain go build) nothing is
// embedded, everything compiles, and App returns nil: the server then
// answers / with a page saying how to build the binary with the app. With
// the tag and no built app the build fails loudly instead of shipping a
// binary without its web app. A committed placeholder in dist would not
// survive vite build, and copying dist into a committed directory would let
// a plain go build embed a stale copy.
package frontend

import "io/fs"

// app is the built app (dist's contents) when the binary was built with
// the "webapp" tag; nil otherwise.
var app fs.FS

// App returns the web app embedded in the binary, rooted at the directory
// holding index.html, or nil when the binary was built without it.
func App() fs.FS { return app }
