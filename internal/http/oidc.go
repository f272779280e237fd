package http

import (
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
)

// oidcCookie keeps one OIDC sign-in's state, nonce and PKCE verifier while
// the browser is at the provider.
const oidcCookie = "toolgate_oidc"

func (s *Server) oidcProvider() (*auth.OIDC, error) {
	if o := s.auth.SignIn.OIDC(); o != nil {
		return o, nil
	}
	return nil, apperr.NotFoundf("oidc_disabled", "sign-in with an OIDC provider is off; set AUTH_MODE=oidc and OIDC_ISSUER")
}

func (s *Server) oidcLogin(c echo.Context) error {
	o, err := s.oidcProvider()
	if err != nil {
		return err
	}
	to, flow, err := o.Begin(c.Request().Context())
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(flow)
	c.SetCookie(&http.Cookie{Name: oidcCookie, Value: base64.RawURLEncoding.EncodeToString(raw), Path: "/api/auth/oidc/",
		MaxAge: 600, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(c.Request())})
	return c.Redirect(http.StatusFound, to)
}

func (s *Server) oidcCallback(c echo.Context) error {
	o, err := s.oidcProvider()
	if err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{Name: oidcCookie, Value: "", Path: "/api/auth/oidc/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: s.secure(c.Request())})
	if e := c.QueryParam("error"); e != "" {
		return apperr.New(apperr.Unauthenticated, "oidc_denied", "the sign-in provider did not sign you in (%.100s); try again", e)
	}
	var flow auth.OIDCFlow
	if ck, err := c.Cookie(oidcCookie); err == nil {
		if raw, err := base64.RawURLEncoding.DecodeString(ck.Value); err == nil {
			_ = json.Unmarshal(raw, &flow) // a bad cookie is an empty flow: refused below
		}
	}
	id, err := o.Finish(c.Request().Context(), flow, c.QueryParam("state"), c.QueryParam("code"))
	if err != nil {
		return err
	}
	ns, err := s.auth.SignIn.OIDCLogin(c.Request().Context(), id, client(c))
	if err != nil {
		return err
	}
	s.setSession(c, ns)
	return c.Redirect(http.StatusSeeOther, "/")
}
