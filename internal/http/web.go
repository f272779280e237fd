package http

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
)

// contentSecurityPolicy keeps the web app to its own origin: scripts and
// API calls only from here, no framing. Images may come from https hosts
// because the chat shows a remote image from the model's answer only after
// the person clicks "Load image"; nothing loads one on its own.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data: https:; connect-src 'self'; object-src 'none'; base-uri 'none'; " +
	"form-action 'self'; frame-ancestors 'none'"

// notBuiltDir is served at / when WEB_DIR names a directory with no built
// app; notBuiltBinary when WEB_DIR is not set and the binary was built
// without the app (a plain go build, not make build).
const (
	notBuiltDir = `<!doctype html><meta charset="utf-8"><title>Toolgate</title>
<h1>Toolgate's web app is not built</h1>
<p>The API is running, but <code>WEB_DIR</code> (<code>%s</code>) has no <code>index.html</code>.
Build the app there with <code>cd frontend &amp;&amp; npm ci &amp;&amp; npm run build</code>, or unset
<code>WEB_DIR</code> to serve the app built into the binary by <code>make build</code> (<code>bin/toolgate</code>).</p>`
	notBuiltBinary = `<!doctype html><meta charset="utf-8"><title>Toolgate</title>
<h1>This Toolgate binary has no web app</h1>
<p>The API is running, but this binary was built without the web app (a plain <code>go build</code>).
Build it with <code>make build</code>, which builds the app and then <code>bin/toolgate</code> with the app inside,
or start it with <code>make run</code>. To serve an app built on disk instead, set <code>WEB_DIR</code>
(e.g. <code>WEB_DIR=frontend/dist</code> after <code>cd frontend &amp;&amp; npm ci &amp;&amp; npm run build</code>).</p>`
)

// webApp serves the built single-page app (WEB_DIR, or the copy embedded
// in the binary): files as they are (hashed
// assets cached for good), and index.html for every other path that is not
// the API, so /c/{id} and /settings survive a reload. Source maps are never
// served, even if a build left one behind: they publish the source.
func (s *Server) webApp(c echo.Context) error {
	p := c.Request().URL.Path
	if p == "/api" || strings.HasPrefix(p, "/api/") {
		return apperr.NotFoundf("route_not_found", "there is no API route %s %s; see docs/openapi.yaml", c.Request().Method, p)
	}
	h := c.Response().Header()
	if s.web == nil {
		return s.webNotBuilt(c)
	}
	name := strings.TrimPrefix(path.Clean("/"+p), "/")
	if path.Ext(name) == ".map" {
		return apperr.NotFoundf("file_not_found", "there is no file /%s in the web app", name)
	}
	if name != "" && name != "index.html" {
		if st, err := fs.Stat(s.web, name); err == nil && !st.IsDir() {
			if strings.HasPrefix(name, "assets/") {
				h.Set("Cache-Control", "public, max-age=31536000, immutable")
			} else {
				h.Set("Cache-Control", "no-cache")
			}
			h.Set("X-Content-Type-Options", "nosniff")
			if serveFile(c, s.web, name) {
				return nil
			}
		}
		if path.Ext(name) != "" {
			return apperr.NotFoundf("file_not_found", "there is no file /%s in the web app", name)
		}
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if !serveFile(c, s.web, "index.html") { // removed since start, e.g. mid-rebuild
		return s.webNotBuilt(c)
	}
	return nil
}

// precompressed are the encodings the web build writes next to each file
// (name.br, name.gz; see frontend/vite.config.ts), best first.
var precompressed = []struct{ coding, ext string }{{"br", ".br"}, {"gzip", ".gz"}}

// serveFile serves name, or its precompressed sibling when the client
// accepts that encoding, with its own ETag and Content-Length (each
// encoding is a representation of its own, so the identity and gzip bytes
// never share a validator). ok is false when name cannot be read.
func serveFile(c echo.Context, fsys fs.FS, name string) (ok bool) {
	h := c.Response().Header()
	body, mod, ok := readFile(fsys, name)
	if !ok {
		return false
	}
	h.Add("Vary", "Accept-Encoding")
	accept := c.Request().Header.Get("Accept-Encoding")
	for _, enc := range precompressed {
		if !acceptsEncoding(accept, enc.coding) {
			continue
		}
		if zbody, _, ok := readFile(fsys, name+enc.ext); ok {
			h.Set("Content-Encoding", enc.coding)
			body = zbody
			break
		}
	}
	sum := sha256.Sum256(body)
	h.Set("ETag", `"`+hex.EncodeToString(sum[:12])+`"`)
	// ServeContent leaves Content-Length out once Content-Encoding is set
	// (it expects on-the-fly compression); these bytes are final, so say
	// how many. It still sets the length of a range itself.
	h.Set("Content-Length", strconv.Itoa(len(body)))
	http.ServeContent(c.Response(), c.Request(), name, mod, bytes.NewReader(body))
	return true
}

// acceptsEncoding reads an Accept-Encoding header: coding is acceptable
// when listed (or matched by "*") with a q-value above zero.
func acceptsEncoding(header, coding string) bool {
	star := false
	for part := range strings.SplitSeq(header, ",") {
		name, params, _ := strings.Cut(part, ";")
		q := 1.0
		for param := range strings.SplitSeq(params, ";") {
			k, v, found := strings.Cut(param, "=")
			if found && strings.EqualFold(strings.TrimSpace(k), "q") {
				var err error
				if q, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
					q = 0
				}
			}
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case coding:
			return q > 0
		case "*":
			star = q > 0
		}
	}
	return star
}

func (s *Server) webNotBuilt(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	if s.webDir == "" {
		return c.HTML(http.StatusServiceUnavailable, notBuiltBinary)
	}
	return c.HTML(http.StatusServiceUnavailable, fmt.Sprintf(notBuiltDir, html.EscapeString(s.webDir)))
}

// readFile reads a regular file of the app; ok is false for a missing file
// or a directory.
func readFile(fsys fs.FS, name string) (body []byte, mod time.Time, ok bool) {
	st, err := fs.Stat(fsys, name)
	if err != nil || st.IsDir() {
		return nil, time.Time{}, false
	}
	body, err = fs.ReadFile(fsys, name)
	return body, st.ModTime(), err == nil
}
