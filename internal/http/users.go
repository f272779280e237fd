package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/auth"
)

func (s *Server) listUsers(c echo.Context) error {
	users, err := s.auth.Accounts.Users(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"users": users})
}

func (s *Server) createUser(c echo.Context) error {
	var in auth.NewUser
	if err := s.decode(c, &in); err != nil {
		return err
	}
	u, err := s.auth.Accounts.CreateUser(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, u)
}

func (s *Server) updateUser(c echo.Context) error {
	var in auth.UserChange
	if err := s.decode(c, &in); err != nil {
		return err
	}
	u, err := s.auth.Accounts.UpdateUser(c.Request().Context(), c.Param("userId"), in)
	if err != nil {
		return err
	}
	if u.Disabled {
		s.chat.StopUser(u.ID)
	}
	return c.JSON(http.StatusOK, u)
}

func (s *Server) deleteUser(c echo.Context) error {
	if err := s.auth.Accounts.DisableUser(c.Request().Context(), c.Param("userId")); err != nil {
		return err
	}
	s.chat.StopUser(c.Param("userId"))
	return c.NoContent(http.StatusNoContent)
}
