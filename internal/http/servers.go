package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/policy"
)

func (s *Server) listServers(c echo.Context) error {
	servers, err := s.policies.Servers.ListServers(c.Request().Context())
	if err != nil {
		return err
	}
	out := serversResponse{Servers: make([]serverView, len(servers))}
	for i, srv := range servers {
		out.Servers[i] = newServerView(srv)
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) createServer(c echo.Context) error {
	var in policy.NewServer
	if err := s.decode(c, &in); err != nil {
		return err
	}
	srv, err := s.policies.Servers.CreateServer(c.Request().Context(), in)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Location", "/api/mcp/servers/"+srv.Label)
	return c.JSON(http.StatusCreated, newServerView(srv))
}

func (s *Server) getServer(c echo.Context) error {
	srv, err := s.policies.Servers.Server(c.Request().Context(), c.Param("serverId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newServerView(srv))
}

func (s *Server) updateServer(c echo.Context) error {
	var p policy.ServerPatch
	if err := s.decode(c, &p); err != nil {
		return err
	}
	srv, err := s.policies.Servers.UpdateServer(c.Request().Context(), c.Param("serverId"), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newServerView(srv))
}

func (s *Server) deleteServer(c echo.Context) error {
	if err := s.policies.Servers.DeleteServer(c.Request().Context(), c.Param("serverId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) refreshServer(c echo.Context) error {
	tools, err := s.policies.Servers.RefreshTools(c.Request().Context(), c.Param("serverId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toolsResponse{Tools: tools})
}
