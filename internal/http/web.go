package http

import (
	"bytes"
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"path"
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

// notBuilt is served at / when WEB_DIR holds no built app.
const notBuilt = `<!doctype html><meta charset="utf-8"><title>Toolgate</title>
<h1>Toolgate's web app is not built</h1>
<p>The API is running, but <code>%s</code> has no <code>index.html</code>.
Start Toolgate with <code>make run</code>, which builds the app, or build it with
<code>cd frontend &amp;&amp; npm ci &amp;&amp; npm run build</code> (or point <code>WEB_DIR</code> at a built app).</p>`

// webApp serves the built single-page app: files as they are (hashed
// assets cached for good), and index.html for every other path that is not
// the API, so /c/{id} and /settings survive a reload.
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
	if name != "" && name != "index.html" {
		if body, mod, ok := readFile(s.web, name); ok {
			if strings.HasPrefix(name, "assets/") {
				h.Set("Cache-Control", "public, max-age=31536000, immutable")
			} else {
				h.Set("Cache-Control", "no-cache")
			}
			h.Set("X-Content-Type-Options", "nosniff")
			http.ServeContent(c.Response(), c.Request(), name, mod, bytes.NewReader(body))
			return nil
		}
		if path.Ext(name) != "" {
			return apperr.NotFoundf("file_not_found", "there is no file /%s in the web app", name)
		}
	}
	body, mod, ok := readFile(s.web, "index.html")
	if !ok { // removed since start, e.g. mid-rebuild
		return s.webNotBuilt(c)
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	http.ServeContent(c.Response(), c.Request(), "index.html", mod, bytes.NewReader(body))
	return nil
}

func (s *Server) webNotBuilt(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTML(http.StatusServiceUnavailable, fmt.Sprintf(notBuilt, html.EscapeString(s.webDir)))
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
