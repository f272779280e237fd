package http

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

func (s *Server) listTokens(c echo.Context) error {
	toks, err := s.auth.APITokens.Tokens(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"tokens": toks})
}

func (s *Server) createToken(c echo.Context) error {
	var in struct {
		Name string `json:"name"`
	}
	if err := s.decode(c, &in); err != nil {
		return err
	}
	t, err := s.auth.APITokens.CreateToken(c.Request().Context(), in.Name)
	if err != nil {
		return err
	}
	// The secret is in this answer only; the database keeps its hash.
	return c.JSON(http.StatusCreated, struct {
		ID        string    `json:"id"`
		Name      string    `json:"name"`
		Token     string    `json:"token"`
		CreatedAt time.Time `json:"created_at"`
	}{t.ID, t.Name, t.Secret, t.CreatedAt})
}

func (s *Server) deleteToken(c echo.Context) error {
	if err := s.auth.APITokens.DeleteToken(c.Request().Context(), c.Param("tokenId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
