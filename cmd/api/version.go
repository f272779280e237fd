package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/toolgate/toolgate/frontend"
)

// Stamped at build time by scripts/build.sh (make build, make run, the
// Dockerfile):
//
//	go build -ldflags "-X main.version=$(git describe --always --dirty) -X main.commit=$(git rev-parse HEAD) -X main.date=..."
//
// Empty in a binary built otherwise (go build, go run, go test): then
// currentBuild reads what Go itself recorded.
var version, commit, date string

// buildInfo says which Toolgate this is.
type buildInfo struct {
	Version string // git describe --always --dirty; "dev" when nothing is known
	Commit  string // the full commit hash; "" unknown
	Date    string // when it was built (stamped), or the commit's time (Go's record)
	Stamped bool   // version, commit and date came from -ldflags
	Go      string // the Go release and platform it was built with
	WebApp  bool   // the web app is embedded (built with make build)
}

// currentBuild describes this binary.
func currentBuild() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	b := describeBuild(version, commit, date, bi)
	b.WebApp = frontend.App() != nil
	return b
}

// describeBuild prefers the -ldflags stamps; without them it falls back on
// Go's build info: the main module's version (Go 1.24+ derives one from the
// git tag or commit, "+dirty" for uncommitted changes) and the vcs.* settings
// go build records in a git checkout. bi may be nil.
func describeBuild(version, commit, date string, bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: version, Commit: commit, Date: date, Stamped: version != "",
		Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if b.Stamped || bi == nil {
		if b.Version == "" {
			b.Version = "dev"
		}
		return b
	}
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			b.Date = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	switch {
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		b.Version = bi.Main.Version
	case b.Commit != "":
		b.Version = b.Commit[:min(len(b.Commit), 12)]
		if modified {
			b.Version += "-dirty"
		}
	default:
		b.Version = "dev"
	}
	return b
}

// writeVersion is `toolgate version`.
func writeVersion(w io.Writer, b buildInfo) error {
	orUnknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	when := "built:   " + orUnknown(b.Date)
	if !b.Stamped {
		when = "commit time: " + orUnknown(b.Date) + " (not stamped: build with make build)"
	}
	web := "embedded"
	if !b.WebApp {
		web = "not embedded (build with make build, or set WEB_DIR)"
	}
	_, err := fmt.Fprintf(w, "toolgate %s\ncommit:  %s\n%s\ngo:      %s\nweb app: %s\n", b.Version, orUnknown(b.Commit), when, b.Go, web)
	return err
}
