package http

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
)

// linkPage is what a browser gets for a sign-in link that does not sign in
// (used, expired, unknown, or its account disabled): a page saying what to
// do, not the JSON error an API client reads. Nothing of the request is
// written into it.
var linkPage = template.Must(template.New("link").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign-in link not valid · Toolgate</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1b1f24}
code{background:#eef1f4;padding:.1rem .3rem;border-radius:4px}a{color:#0b5cad}</style></head>
<body><main>
<h1>{{.Title}}</h1>
<p>{{.Why}}</p>
{{if .Disabled}}<p>Ask an admin to enable your account.</p>
{{else}}<p><strong>Get a new link:</strong> on the machine where Toolgate runs, run
<code>toolgate link</code> (from the project folder: <code>./bin/toolgate link</code>, with the same
<code>DATABASE_URL</code> as the server). It prints a new one-time link{{if .Demo}} for the demo admin{{end}};
open it in this browser. {{if .Demo}}Restarting Toolgate (<code>make run</code>) prints one too.{{else}}If you do not run
Toolgate yourself, ask whoever does for a new link.{{end}}</p>
{{end}}<p><a href="/">Go to the sign-in page</a>{{if not .Demo}} (to sign in with your email and password){{end}}.</p>
</main></body></html>
`))

// wantsHTML says whether the request is a browser's page load: its Accept
// asks for text/html. API clients (Accept: application/json, */*, none)
// keep the JSON error.
func wantsHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/html") {
			return true
		}
	}
	return false
}

// linkFailed answers a sign-in link that did not sign in: the HTML page for
// a browser, the JSON error otherwise (same status either way).
func (s *Server) linkFailed(c echo.Context, err error) error {
	e, status := toAppError(err)
	if e.Kind == apperr.Internal || !wantsHTML(c.Request()) {
		return err
	}
	st, serr := s.auth.SignIn.Status(c.Request().Context())
	data := struct {
		Title, Why     string
		Demo, Disabled bool
	}{
		Title: "This sign-in link does not work any more",
		Why:   "Each sign-in link works once and for a limited time: this one was used already, has expired, or is not one Toolgate made.",
		Demo:  serr == nil && st.SignInLink,
	}
	if e.Code == "account_disabled" {
		data.Title, data.Why, data.Disabled = "This account is disabled", "The link is for an account an admin disabled.", true
	}
	var b strings.Builder
	if err := linkPage.Execute(&b, data); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	return c.HTML(status, b.String())
}
