package http

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/auth"
)

// SessionCookie holds a signed-in browser's session secret.
const SessionCookie = "toolgate_session"

// openAPIPaths need no session: signing in, and what the sign-in page reads.
func openAPIPath(p string) bool {
	switch p {
	case "/api/auth/login", "/api/auth/status", "/api/auth/setup", "/api/auth/link":
		return true
	}
	return strings.HasPrefix(p, "/api/auth/oidc/")
}

// authenticate puts the caller of every /api request on its context: the
// bearer token if one is sent, else the session cookie. The web app's files,
// /healthz and /readyz stay open (the app shows its own sign-in page).
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !strings.HasPrefix(r.URL.Path, "/api/") || openAPIPath(r.URL.Path) || approvalLinkPath(r.URL.Path) {
			return next(c)
		}
		if err := s.signedIn(c); err != nil {
			return err
		}
		return next(c)
	}
}

// signedIn puts the caller in c's request context. (Not in authenticate's
// frame: a stream waits below it, see idempotent.)
func (s *Server) signedIn(c echo.Context) error {
	u, err := s.caller(c)
	if err != nil {
		return err
	}
	c.SetRequest(c.Request().WithContext(auth.WithUser(c.Request().Context(), u)))
	return nil
}

func (s *Server) caller(c echo.Context) (auth.User, error) {
	ctx := c.Request().Context()
	if s.auth.SignIn.Mode() == auth.ModeNone {
		if u, ok := s.auth.SignIn.LocalUser(); ok {
			return u, nil
		}
		return auth.User{}, auth.Unauthenticated()
	}
	if h := c.Request().Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return auth.User{}, auth.Unauthenticated()
		}
		return s.auth.SignIn.TokenUser(ctx, strings.TrimSpace(tok))
	}
	ck, err := c.Cookie(SessionCookie)
	if err != nil {
		return auth.User{}, auth.Unauthenticated()
	}
	return s.auth.SignIn.SessionUser(ctx, ck.Value)
}

// adminOnly is the route middleware of admin-only routes.
func (s *Server) adminOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u, ok := auth.UserFrom(c.Request().Context())
		if !ok {
			return auth.Unauthenticated()
		}
		if !u.IsAdmin() {
			return auth.AdminOnly()
		}
		return next(c)
	}
}

// secure reports whether the request came over https (X-Forwarded-Proto
// counts only with TRUST_PROXY_HEADERS=true).
func (s *Server) secure(r *http.Request) bool {
	return r.TLS != nil || (s.trustProxy && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https"))
}

func (s *Server) setSession(c echo.Context, ns auth.NewSession) {
	c.SetCookie(&http.Cookie{Name: SessionCookie, Value: ns.Secret, Path: "/", Expires: ns.Expires,
		MaxAge: int(time.Until(ns.Expires).Seconds()), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(c.Request())})
}

func (s *Server) clearSession(c echo.Context) {
	c.SetCookie(&http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: s.secure(c.Request())})
}

func client(c echo.Context) auth.Client {
	return auth.Client{Addr: c.RealIP(), UserAgent: c.Request().UserAgent()}
}

// me is what the sign-in routes answer: who is signed in.
type me struct {
	ID    string    `json:"id"`
	Email string    `json:"email"`
	Role  auth.Role `json:"role"`
}

func meOf(u auth.User) me { return me{ID: u.ID, Email: u.Email, Role: u.Role} }

func (s *Server) login(c echo.Context) error {
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := s.decode(c, &in); err != nil {
		return err
	}
	ns, err := s.auth.SignIn.Login(c.Request().Context(), in.Email, in.Password, client(c))
	if err != nil {
		return err
	}
	s.setSession(c, ns)
	return c.JSON(http.StatusOK, meOf(ns.User))
}

func (s *Server) logout(c echo.Context) error {
	if ck, err := c.Cookie(SessionCookie); err == nil {
		if err := s.auth.SignIn.Logout(c.Request().Context(), ck.Value); err != nil {
			return err
		}
	}
	s.clearSession(c)
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) me(c echo.Context) error {
	u, _ := auth.UserFrom(c.Request().Context())
	return c.JSON(http.StatusOK, meOf(u))
}

func (s *Server) authStatus(c echo.Context) error {
	st, err := s.auth.SignIn.Status(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

func (s *Server) setup(c echo.Context) error {
	var in struct {
		Token    string `json:"token"`
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := s.decode(c, &in); err != nil {
		return err
	}
	ns, err := s.auth.SignIn.Setup(c.Request().Context(), in.Token, in.Email, in.Password, client(c))
	if err != nil {
		return err
	}
	s.setSession(c, ns)
	return c.JSON(http.StatusCreated, meOf(ns.User))
}

func (s *Server) useLink(c echo.Context) error {
	ns, err := s.auth.SignIn.UseLink(c.Request().Context(), c.QueryParam("token"), client(c))
	if err != nil {
		return s.linkFailed(c, err)
	}
	s.setSession(c, ns)
	return c.Redirect(http.StatusSeeOther, "/")
}
