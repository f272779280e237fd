package http_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeWebApp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"index.html":          `<!doctype html><div id="root"></div><script type="module" src="/assets/index-abc.js"></script>`,
		"assets/index-abc.js": `console.log("app")`,
		"robots.txt":          "User-agent: *\nDisallow: /\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestWeb_ServesTheAppAtItsOwnRoutes: the app's pages survive a reload, its
// hashed assets are cached for good, and the page may only talk to its own
// origin.
func TestWeb_ServesTheAppAtItsOwnRoutes(t *testing.T) {
	e := newAPIWith(t, envOptions{webDir: writeWebApp(t)})
	for _, path := range []string{"/", "/c/conv_123", "/settings?server=demo&tool=x", "/audit", "/index.html"} {
		r := e.call("GET", path, nil)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `<div id="root">`) {
			t.Errorf("GET %s = %d %.80q, want 200 and index.html", path, r.status, r.body)
			continue
		}
		for h, want := range map[string]string{"Cache-Control": "no-cache", "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff"} {
			if got := r.header.Get(h); got != want {
				t.Errorf("GET %s: %s = %q, want %q", path, h, got, want)
			}
		}
		csp := r.header.Get("Content-Security-Policy")
		for _, part := range []string{"default-src 'self'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, part) {
				t.Errorf("GET %s: CSP %q lacks %q", path, csp, part)
			}
		}
	}
	r := e.call("GET", "/assets/index-abc.js", nil)
	if r.status != http.StatusOK || string(r.body) != `console.log("app")` {
		t.Fatalf("asset = %d %q", r.status, r.body)
	}
	if got := r.header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
		t.Errorf("asset Cache-Control = %q", got)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("asset Content-Type = %q", ct)
	}
	if r := e.call("GET", "/robots.txt", nil); r.status != http.StatusOK || r.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("robots.txt = %d, Cache-Control %q", r.status, r.header.Get("Cache-Control"))
	}
	if r := e.call("HEAD", "/settings", nil); r.status != http.StatusOK {
		t.Errorf("HEAD /settings = %d", r.status)
	}
}

// TestWeb_MissingFilesAndAPIRoutesAre404: a missing asset is not answered
// with the page (a browser would run HTML as a script), and an unknown API
// path is the API's JSON 404, not the app.
func TestWeb_MissingFilesAndAPIRoutesAre404(t *testing.T) {
	e := newAPIWith(t, envOptions{webDir: writeWebApp(t)})
	if r := e.call("GET", "/assets/gone-123.js", nil); r.status != http.StatusNotFound {
		t.Errorf("missing asset = %d %q, want 404", r.status, r.body)
	}
	if r := e.call("GET", "/../../etc/passwd", nil); r.status != http.StatusNotFound && !strings.Contains(string(r.body), `id="root"`) {
		t.Errorf("path outside = %d %q", r.status, r.body)
	}
	for _, path := range []string{"/api/nope", "/api", "/api/mcp/servers/demo/nope"} {
		r := e.call("GET", path, nil)
		var body struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(r.body, &body); err != nil || r.status != http.StatusNotFound || body.Error.Code != "route_not_found" {
			t.Errorf("GET %s = %d %q, want 404 route_not_found", path, r.status, r.body)
		}
	}
	// The API itself is unchanged by the catch-all.
	if r := e.call("GET", "/api/mcp/servers", nil); r.status != http.StatusOK || !strings.Contains(string(r.body), `"servers"`) {
		t.Errorf("GET /api/mcp/servers = %d %q", r.status, r.body)
	}
}

// TestWeb_NotBuiltSaysHowToBuild: with no built app, / says what to run
// instead of a bare 404.
func TestWeb_NotBuiltSaysHowToBuild(t *testing.T) {
	e := newAPIWith(t, envOptions{webDir: filepath.Join(t.TempDir(), "dist")})
	r := e.call("GET", "/", nil)
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "make run") || !strings.Contains(string(r.body), "npm run build") {
		t.Errorf("GET / = %d %q, want 503 naming make run and npm run build", r.status, r.body)
	}
}
