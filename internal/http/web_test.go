package http_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
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
		// img-src: data: for the images tools return (shown as data: URLs), https: for Markdown images on "Load image".
		for _, part := range []string{"default-src 'self'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "img-src 'self' data: https:;"} {
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
// instead of a bare 404: for a WEB_DIR without an app, how to build one
// there; for a binary built without the app (a plain go build) and no
// WEB_DIR, how to build the binary with it.
func TestWeb_NotBuiltSaysHowToBuild(t *testing.T) {
	tests := []struct {
		name string
		opts envOptions
		want []string
	}{
		{"WEB_DIR without index.html", envOptions{webDir: filepath.Join(t.TempDir(), "dist")}, []string{"WEB_DIR", "dist", "npm run build", "make build"}},
		{"binary built without the app", envOptions{}, []string{"built without the web app", "make build", "bin/toolgate", "WEB_DIR"}},
		{"embedded app without index.html", envOptions{web: fstest.MapFS{"assets/a.js": {Data: []byte("x")}}}, []string{"built without the web app", "make build"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newAPIWith(t, tt.opts)
			r := e.call("GET", "/settings", nil)
			if r.status != http.StatusServiceUnavailable || r.header.Get("Cache-Control") != "no-store" {
				t.Errorf("GET /settings = %d, Cache-Control %q, want 503 no-store", r.status, r.header.Get("Cache-Control"))
			}
			for _, want := range tt.want {
				if !strings.Contains(string(r.body), want) {
					t.Errorf("GET /settings: the page does not say %q:\n%s", want, r.body)
				}
			}
		})
	}
}

// embeddedApp is writeCompressedWebApp's app as the binary embeds it: an
// fs.FS that is no directory, whose files have no modification time.
func embeddedApp(t *testing.T) (fstest.MapFS, []byte) {
	t.Helper()
	dir, js := writeCompressedWebApp(t)
	app := fstest.MapFS{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		app[filepath.ToSlash(rel)] = &fstest.MapFile{Data: body, Mode: 0o444}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return app, js
}

// TestWeb_ServesTheAppEmbeddedInTheBinary: with no WEB_DIR the app built
// into the binary is served as one on disk would be: the page at its
// routes, hashed assets cached for good, precompressed siblings to clients
// that accept them, and never a source map.
func TestWeb_ServesTheAppEmbeddedInTheBinary(t *testing.T) {
	app, js := embeddedApp(t)
	e := newAPIWith(t, envOptions{web: app})
	for _, path := range []string{"/", "/c/conv_123", "/settings"} {
		r := e.call("GET", path, nil)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `<div id="root">`) || r.header.Get("Content-Security-Policy") == "" {
			t.Errorf("GET %s = %d %.80q, CSP %q: want 200 and index.html with its CSP", path, r.status, r.body, r.header.Get("Content-Security-Policy"))
		}
	}
	r, _ := e.raw("GET", "/assets/app-1a2b.js", "", map[string]string{"Accept-Encoding": "gzip"})
	if r.status != http.StatusOK || r.header.Get("Content-Encoding") != "gzip" || r.header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Fatalf("gzip asset = %d, Content-Encoding %q, Cache-Control %q", r.status, r.header.Get("Content-Encoding"), r.header.Get("Cache-Control"))
	}
	if !bytes.Equal(r.body, app["assets/app-1a2b.js.gz"].Data) || r.header.Get("ETag") == "" {
		t.Errorf("gzip asset: %d bytes, ETag %q; want the .gz file with a validator", len(r.body), r.header.Get("ETag"))
	}
	r, _ = e.raw("GET", "/assets/app-1a2b.js", "", map[string]string{"Accept-Encoding": "identity"})
	if r.status != http.StatusOK || !bytes.Equal(r.body, js) {
		t.Errorf("identity asset = %d, %d bytes; want the bundle", r.status, len(r.body))
	}
	if r := e.call("GET", "/assets/app-1a2b.js.map", nil); r.status != http.StatusNotFound || strings.Contains(string(r.body), "secret.ts") {
		t.Errorf("source map = %d %.80q, want 404", r.status, r.body)
	}
	if r := e.call("GET", "/assets/gone.js", nil); r.status != http.StatusNotFound {
		t.Errorf("missing asset = %d, want 404", r.status)
	}
}

// TestWeb_WebDirOverridesTheEmbeddedApp: WEB_DIR (for development: serve
// what npm run build just wrote) wins over the copy in the binary.
func TestWeb_WebDirOverridesTheEmbeddedApp(t *testing.T) {
	embedded := fstest.MapFS{"index.html": {Data: []byte(`<!doctype html><p>embedded copy</p>`)}}
	e := newAPIWith(t, envOptions{webDir: writeWebApp(t), web: embedded})
	r := e.call("GET", "/", nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `<div id="root">`) {
		t.Errorf("GET / = %d %.80q, want WEB_DIR's index.html", r.status, r.body)
	}
	// A WEB_DIR with no app is a mistake to show, not a reason to fall back.
	e = newAPIWith(t, envOptions{webDir: filepath.Join(t.TempDir(), "dist"), web: embedded})
	if r := e.call("GET", "/", nil); r.status != http.StatusServiceUnavailable {
		t.Errorf("GET / with an empty WEB_DIR = %d %.80q, want 503", r.status, r.body)
	}
}

// writeCompressedWebApp adds to writeWebApp's app a bundle worth
// compressing with the .gz and .br siblings the build writes (the .br is a
// stand-in: the server passes it through, and the Go standard library has
// no brotli decoder), a gzipped index.html, and a source map left behind.
func writeCompressedWebApp(t *testing.T) (dir string, js []byte) {
	t.Helper()
	dir = writeWebApp(t)
	js = bytes.Repeat([]byte(`export const greeting = "hello from the bundle";`+"\n"), 200)
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"assets/app-1a2b.js":     js,
		"assets/app-1a2b.js.gz":  gzipped(t, js),
		"assets/app-1a2b.js.br":  []byte("brotli stand-in"),
		"assets/app-1a2b.js.map": []byte(`{"version":3,"sources":["src/secret.ts"]}`),
		"index.html.gz":          gzipped(t, page),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, js
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestWeb_ServesPrecompressedAssetsToClientsThatAcceptThem: a browser that
// accepts gzip or brotli gets the build's precompressed file, labelled and
// sized as such, with a validator of its own; others get the file as it is;
// caches are told the answer depends on Accept-Encoding.
func TestWeb_ServesPrecompressedAssetsToClientsThatAcceptThem(t *testing.T) {
	dir, js := writeCompressedWebApp(t)
	e := newAPIWith(t, envOptions{webDir: dir})
	tests := []struct {
		accept, wantEncoding string
	}{
		{"gzip", "gzip"},
		{"gzip, deflate, br, zstd", "br"},
		{"br;q=0, gzip;q=0.8", "gzip"},
		{"*", "br"},
		{"*, br;q=0", "gzip"},
		{"identity", ""},
		{"gzip;q=0, br;q=0", ""},
		{"deflate", ""},
	}
	etags := map[string]string{}
	for _, tt := range tests {
		r, _ := e.raw("GET", "/assets/app-1a2b.js", "", map[string]string{"Accept-Encoding": tt.accept})
		if r.status != http.StatusOK {
			t.Fatalf("Accept-Encoding %q: status %d", tt.accept, r.status)
		}
		if got := r.header.Get("Content-Encoding"); got != tt.wantEncoding {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", tt.accept, got, tt.wantEncoding)
		}
		if got := r.header.Values("Vary"); !strings.Contains(strings.Join(got, ","), "Accept-Encoding") {
			t.Errorf("Accept-Encoding %q: Vary %q lacks Accept-Encoding", tt.accept, got)
		}
		if got, want := r.header.Get("Content-Length"), strconv.Itoa(len(r.body)); got != want {
			t.Errorf("Accept-Encoding %q: Content-Length %q, want %s (the bytes sent)", tt.accept, got, want)
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
			t.Errorf("Accept-Encoding %q: Content-Type %q, want the file's own type", tt.accept, ct)
		}
		if cc := r.header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
			t.Errorf("Accept-Encoding %q: Cache-Control %q", tt.accept, cc)
		}
		var plain []byte
		switch tt.wantEncoding {
		case "gzip":
			zr, err := gzip.NewReader(bytes.NewReader(r.body))
			if err != nil {
				t.Fatalf("Accept-Encoding %q: body is not gzip: %v", tt.accept, err)
			}
			if plain, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
			if len(r.body) >= len(js) {
				t.Errorf("gzip body %d bytes, not smaller than %d", len(r.body), len(js))
			}
		case "br":
			if string(r.body) != "brotli stand-in" {
				t.Errorf("Accept-Encoding %q: body %.40q, want the .br file", tt.accept, r.body)
			}
			plain = js
		default:
			plain = r.body
		}
		if !bytes.Equal(plain, js) {
			t.Errorf("Accept-Encoding %q: decodes to %d bytes %.40q, want the bundle", tt.accept, len(plain), plain)
		}
		etag := r.header.Get("ETag")
		if etag == "" {
			t.Errorf("Accept-Encoding %q: no ETag", tt.accept)
		}
		if prev, ok := etags[tt.wantEncoding]; ok && prev != etag {
			t.Errorf("encoding %q: ETag %s then %s for the same bytes", tt.wantEncoding, prev, etag)
		}
		etags[tt.wantEncoding] = etag
	}
	if etags["gzip"] == etags[""] || etags["br"] == etags[""] || etags["gzip"] == etags["br"] {
		t.Errorf("ETags %v: each encoding needs its own", etags)
	}

	// Revalidation: the gzip ETag matches the gzip answer only.
	r, _ := e.raw("GET", "/assets/app-1a2b.js", "", map[string]string{"Accept-Encoding": "gzip", "If-None-Match": etags["gzip"]})
	if r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Errorf("If-None-Match gzip ETag = %d %d bytes, want 304", r.status, len(r.body))
	}
	r, _ = e.raw("GET", "/assets/app-1a2b.js", "", map[string]string{"Accept-Encoding": "identity", "If-None-Match": etags["gzip"]})
	if r.status != http.StatusOK || !bytes.Equal(r.body, js) {
		t.Errorf("identity with the gzip ETag = %d, want 200 and the bundle", r.status)
	}
	// HEAD says how long the compressed answer is.
	r, _ = e.raw("HEAD", "/assets/app-1a2b.js", "", map[string]string{"Accept-Encoding": "gzip"})
	if r.status != http.StatusOK || r.header.Get("Content-Encoding") != "gzip" || r.header.Get("Content-Length") != strconv.Itoa(len(gzipped(t, js))) {
		t.Errorf("HEAD gzip = %d, Content-Encoding %q, Content-Length %q", r.status, r.header.Get("Content-Encoding"), r.header.Get("Content-Length"))
	}
	// The page, at any of its routes, keeps its own headers when gzipped.
	r, _ = e.raw("GET", "/settings", "", map[string]string{"Accept-Encoding": "gzip"})
	if r.status != http.StatusOK || r.header.Get("Content-Encoding") != "gzip" || r.header.Get("Content-Security-Policy") == "" || r.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("GET /settings gzip = %d, Content-Encoding %q, CSP %q, Cache-Control %q", r.status, r.header.Get("Content-Encoding"), r.header.Get("Content-Security-Policy"), r.header.Get("Cache-Control"))
	}
	// A file with no compressed sibling goes out as it is.
	r, _ = e.raw("GET", "/assets/index-abc.js", "", map[string]string{"Accept-Encoding": "gzip, br"})
	if r.status != http.StatusOK || r.header.Get("Content-Encoding") != "" || string(r.body) != `console.log("app")` {
		t.Errorf("uncompressed asset = %d, Content-Encoding %q, %q", r.status, r.header.Get("Content-Encoding"), r.body)
	}
}

// TestWeb_SourceMapsAreNotServed: a source map publishes the source, so
// none is served, even one a build left in the directory.
func TestWeb_SourceMapsAreNotServed(t *testing.T) {
	dir, _ := writeCompressedWebApp(t)
	e := newAPIWith(t, envOptions{webDir: dir})
	for _, path := range []string{"/assets/app-1a2b.js.map", "/assets/APP-1a2b.js.map", "/assets/./app-1a2b.js.map", "/assets/gone.js.map", "/index.js.map"} {
		r, _ := e.raw("GET", path, "", map[string]string{"Accept-Encoding": "identity"})
		if r.status != http.StatusNotFound || strings.Contains(string(r.body), "secret.ts") {
			t.Errorf("GET %s = %d %.80q, want 404", path, r.status, r.body)
		}
	}
}
