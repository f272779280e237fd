package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
)

// TestRun_VersionPrintsTheStamps: `toolgate version` prints what make build
// stamped with -ldflags (version, commit, build date), the Go release, and
// whether the web app is inside, and reads no configuration.
func TestRun_VersionPrintsTheStamps(t *testing.T) {
	old := [3]string{version, commit, date}
	t.Cleanup(func() { version, commit, date = old[0], old[1], old[2] })
	version, commit, date = "v1.4.0-2-gabc1234-dirty", "abc1234def5678abc1234def5678abc1234def56", "2026-05-04T10:11:12Z"

	var out bytes.Buffer
	getenv := func(k string) string { t.Errorf("version read %s from the environment", k); return "" }
	if err := run(context.Background(), []string{"version"}, getenv, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"toolgate v1.4.0-2-gabc1234-dirty\n", "commit:  abc1234def5678abc1234def5678abc1234def56\n",
		"built:   2026-05-04T10:11:12Z\n", "go:      go1.", "web app: not embedded"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("toolgate version does not print %q:\n%s", want, out.String())
		}
	}
}

// TestDescribeBuild_FallsBackOnGoBuildInfo: without -ldflags stamps the
// version comes from what go build recorded: the module version Go derives
// from git, else the commit (marked dirty), else "dev".
func TestDescribeBuild_FallsBackOnGoBuildInfo(t *testing.T) {
	vcs := func(rev, at, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: at}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name                    string
		stamps                  [3]string
		bi                      *debug.BuildInfo
		wantVersion, wantCommit string
		wantDate                string
		wantStamped             bool
	}{
		{"stamped wins", [3]string{"v2.0.0", "cafe", "2026-01-02T03:04:05Z"},
			&debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}, Settings: vcs(rev, "2020-01-01T00:00:00Z", "false")},
			"v2.0.0", "cafe", "2026-01-02T03:04:05Z", true},
		{"module version from git", [3]string{},
			&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260102030405-0123456789ab+dirty"}, Settings: vcs(rev, "2026-01-02T03:04:05Z", "true")},
			"v0.0.0-20260102030405-0123456789ab+dirty", rev, "2026-01-02T03:04:05Z", false},
		{"devel: the commit, dirty", [3]string{},
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "2026-01-02T03:04:05Z", "true")},
			"0123456789ab-dirty", rev, "2026-01-02T03:04:05Z", false},
		{"devel: the commit, clean", [3]string{},
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "2026-01-02T03:04:05Z", "false")},
			"0123456789ab", rev, "2026-01-02T03:04:05Z", false},
		{"nothing known", [3]string{}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev", "", "", false},
		{"no build info", [3]string{}, nil, "dev", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := describeBuild(tt.stamps[0], tt.stamps[1], tt.stamps[2], tt.bi)
			if b.Version != tt.wantVersion || b.Commit != tt.wantCommit || b.Date != tt.wantDate || b.Stamped != tt.wantStamped {
				t.Errorf("describeBuild = %+v, want version %q commit %q date %q stamped %v", b, tt.wantVersion, tt.wantCommit, tt.wantDate, tt.wantStamped)
			}
		})
	}
	var out bytes.Buffer
	if err := writeVersion(&out, buildInfo{Version: "0123456789ab", Date: "2026-01-02T03:04:05Z", WebApp: true}); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "commit time: 2026-01-02T03:04:05Z (not stamped") || !strings.Contains(s, "commit:  unknown") ||
		!strings.Contains(s, "web app: embedded\n") {
		t.Errorf("unstamped version output:\n%s", s)
	}
}

// TestRun_UsageErrorsNameTheCommands: a command line that names no command
// is a usage error (main exits 2) that prints the usage, before any
// configuration is read, so it is not hidden by an environment not set up.
func TestRun_UsageErrorsNameTheCommands(t *testing.T) {
	bad := map[string]string{"LISTEN_ADDR": "nonsense", "DATABASE_URL": "mysql://x"} // config.Load would fail
	getenv := func(k string) string { return bad[k] }
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"sideways"}, `unknown command "sideways"`},
		{[]string{"--verbose"}, `unknown command "--verbose"`},
		{[]string{"serve", "now"}, "serve takes no arguments"},
		{[]string{"migrate"}, "migrate needs one of up, down or status"},
		{[]string{"migrate", "sideways"}, "migrate needs one of up, down or status"},
		{[]string{"migrate", "up", "now"}, "migrate needs one of up, down or status"},
		{[]string{"version", "--short"}, "version takes no arguments"},
		{[]string{"healthcheck", "http://x"}, "healthcheck takes no arguments"},
		{[]string{"token"}, "token create EMAIL [NAME]"},
		{[]string{"token", "create"}, "token create EMAIL [NAME]"},
		{[]string{"token", "delete", "a@b.c"}, "token create EMAIL [NAME]"},
		{[]string{"token", "create", "a@b.c", "name", "extra"}, "token create EMAIL [NAME]"},
		{[]string{"link", "a@b.c", "extra"}, "link takes at most one argument: link [EMAIL]"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		err := run(context.Background(), tt.args, getenv, &out)
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("toolgate %v: err %v, want a usage error", tt.args, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), usage) {
			t.Errorf("toolgate %v: %q, want %q and the usage", tt.args, err, tt.want)
		}
		if out.Len() != 0 {
			t.Errorf("toolgate %v printed %q", tt.args, out.String())
		}
	}
	if !strings.Contains(usage, "toolgate [serve | migrate up|down|status | version | chat [flags] | inbox [flags] | token create EMAIL [NAME]") {
		t.Errorf("usage %q", usage)
	}
	for _, arg := range []string{"help", "-h", "--help"} {
		var out bytes.Buffer
		if err := run(context.Background(), []string{arg}, getenv, &out); err != nil || !strings.HasPrefix(out.String(), usage) ||
			!strings.Contains(out.String(), "healthcheck") {
			t.Errorf("toolgate %s: err %v, printed %q; want the usage and every command", arg, err, out.String())
		}
	}
}

// TestRun_HealthcheckAsksHealthzOnListenAddr: `toolgate healthcheck` (the
// Docker HEALTHCHECK) succeeds only when LISTEN_ADDR's server answers
// /healthz with 200, over loopback when it listens on every interface.
func TestRun_HealthcheckAsksHealthzOnListenAddr(t *testing.T) {
	var mu sync.Mutex
	status := http.StatusOK
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, r.URL.Path)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	check := func(listen string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), []string{"healthcheck"}, func(k string) string {
			if k == "LISTEN_ADDR" {
				return listen
			}
			return ""
		}, &out)
		return out.String(), err
	}

	for _, listen := range []string{"127.0.0.1:" + port, "0.0.0.0:" + port, ":" + port} {
		if out, err := check(listen); err != nil || !strings.Contains(out, "ok: http://127.0.0.1:"+port+"/healthz") {
			t.Errorf("LISTEN_ADDR=%s: err %v, printed %q", listen, err, out)
		}
	}
	mu.Lock()
	if len(paths) != 3 || paths[0] != "/healthz" {
		t.Errorf("requests %v, want GET /healthz each time", paths)
	}
	status = http.StatusServiceUnavailable
	mu.Unlock()
	if _, err := check("127.0.0.1:" + port); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("a 503 passed the check: %v", err)
	}
	srv.Close()
	if _, err := check("127.0.0.1:" + port); err == nil {
		t.Error("nothing listening passed the check")
	}
	for _, listen := range []string{"8080", "127.0.0.1:0"} {
		if _, err := check(listen); err == nil || !strings.Contains(err.Error(), "LISTEN_ADDR") {
			t.Errorf("LISTEN_ADDR=%s: err %v, want one naming LISTEN_ADDR", listen, err)
		}
	}
}
