package http

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/approvallink"
	"github.com/toolgate/toolgate/internal/auth"
)

// The signed one-time approve and deny links of webhook deliveries
// (docs/api.md, "Signed approval links"). Both routes need no session: the
// token in the body is the credential. Who may call: anyone holding the
// token; a caller who is signed in (a session or a tg_ token) must be the
// person the link was sent for (403 link_other_person otherwise). The
// token travels in the POSTed body, never in a URL, so it is in no access
// log.

// approvalLinkPaths need no session.
func approvalLinkPath(p string) bool {
	return p == "/api/approval-links/view" || p == "/api/approval-links/decision"
}

// viewApprovalLink answers the card a link opens; it decides nothing.
func (s *Server) viewApprovalLink(c echo.Context) error {
	var in approvallink.Input
	ctx, err := s.linkRequest(c, &in)
	if err != nil {
		return err
	}
	v, err := s.links.View(ctx, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// decideByApprovalLink makes the link's decision, once.
func (s *Server) decideByApprovalLink(c echo.Context) error {
	var in approvallink.DecideInput
	ctx, err := s.linkRequest(c, &in)
	if err != nil {
		return err
	}
	v, err := s.links.Decide(ctx, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// linkRequest decodes the body into in and returns the request's context
// with the caller on it when one is signed in. A bearer token that is not
// valid is refused (its sender meant to be someone); a session cookie that
// no longer is valid is ignored, as for a signed-out browser. With
// AUTH_MODE=none nobody is signed in as anyone: the link decides.
func (s *Server) linkRequest(c echo.Context, in any) (context.Context, error) {
	c.Response().Header().Set("Cache-Control", "no-store")
	if s.links == nil {
		return nil, apperr.NotFoundf("links_off", "signed approval links are not enabled on this server")
	}
	if err := s.decode(c, in); err != nil {
		return nil, err
	}
	ctx := c.Request().Context()
	if s.auth.SignIn.Mode() == auth.ModeNone {
		return ctx, nil
	}
	if h := c.Request().Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return nil, auth.Unauthenticated()
		}
		u, err := s.auth.SignIn.TokenUser(ctx, strings.TrimSpace(tok))
		if err != nil {
			return nil, err
		}
		return auth.WithUser(ctx, u), nil
	}
	if ck, err := c.Cookie(SessionCookie); err == nil {
		if u, err := s.auth.SignIn.SessionUser(ctx, ck.Value); err == nil {
			return auth.WithUser(ctx, u), nil
		} else if apperr.KindOf(err) != apperr.Unauthenticated {
			return nil, err
		}
	}
	return ctx, nil
}
