package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testdb"
)

// getText GETs url and returns its status and body; status 0 when nothing
// answered.
func getText(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// pprofIndex is a line of net/http/pprof's index page.
const pprofIndex = "Types of profiles available"

// TestRun_DebugAddrServesProfilesOnItsOwnListener: DEBUG_ADDR serves
// net/http/pprof there, and the API's listener still does not.
func TestRun_DebugAddrServesProfilesOnItsOwnListener(t *testing.T) {
	debug := freeAddr(t)
	base, _, stop := start(t, map[string]string{"DATABASE_URL": testdb.URL(t), "DEBUG_ADDR": debug})
	if code, body := getText(t, "http://"+debug+"/debug/pprof/"); code != 200 || !strings.Contains(body, pprofIndex) {
		t.Errorf("DEBUG_ADDR /debug/pprof/: %d %.200s", code, body)
	}
	if code, body := getText(t, "http://"+debug+"/debug/pprof/goroutine?debug=1"); code != 200 || !strings.Contains(body, "goroutine profile:") {
		t.Errorf("DEBUG_ADDR goroutine profile: %d %.200s", code, body)
	}
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline"} {
		if code, body := getText(t, base+p); strings.Contains(body, pprofIndex) || strings.Contains(body, "goroutine profile:") || (code == 200 && strings.Contains(body, "api.test")) {
			t.Errorf("the API listener serves %s: %d %.200s", p, code, body)
		}
	}
	stop()
	if code, body := getText(t, "http://"+debug+"/debug/pprof/"); code != 0 {
		t.Errorf("after shutdown DEBUG_ADDR still answers: %d %.100s", code, body)
	}
}

// TestRun_NoDebugAddrServesNoProfiles: unset, no profiles anywhere (the API
// listener included) and nothing says they are served.
func TestRun_NoDebugAddrServesNoProfiles(t *testing.T) {
	base, logs, _ := start(t, map[string]string{"DATABASE_URL": testdb.URL(t)})
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/heap"} {
		if code, body := getText(t, base+p); strings.Contains(body, pprofIndex) || strings.Contains(body, "goroutine profile:") || (code == 200 && !strings.Contains(body, "<html") && !strings.Contains(body, "<!doctype")) {
			t.Errorf("%s: %d %.200s", p, code, body)
		}
	}
	if strings.Contains(logs.String(), "DEBUG_ADDR") {
		t.Errorf("logs mention profiles although DEBUG_ADDR is unset:\n%s", logs)
	}
}
