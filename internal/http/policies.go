package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/policy"
)

func (s *Server) listTools(c echo.Context) error {
	tools, err := s.policies.Tools(c.Request().Context(), c.Param("serverId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toolsResponse{Tools: tools})
}

func (s *Server) listPolicies(c echo.Context) error {
	pols, err := s.policies.Policies(c.Request().Context(), c.Param("serverId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, policiesResponse{Policies: pols})
}

type putPolicyRequest struct {
	Policy *string `json:"policy"`
}

func (s *Server) putPolicy(c echo.Context) error {
	var req putPolicyRequest
	if err := s.decode(c, &req); err != nil {
		return err
	}
	if req.Policy == nil {
		return apperr.Invalidf("invalid_policy", "policy",
			"policy is required: one of always, never, blocked (DELETE the approval-policy to fall back to the default)")
	}
	tool, err := s.policies.SetPolicy(c.Request().Context(), c.Param("serverId"), c.Param("toolName"), policy.Policy(*req.Policy))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tool)
}

func (s *Server) deletePolicy(c echo.Context) error {
	tool, err := s.policies.DeletePolicy(c.Request().Context(), c.Param("serverId"), c.Param("toolName"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tool)
}

type putPoliciesRequest struct {
	Policies map[string]*policy.Policy `json:"policies"`
}

func (s *Server) putPolicies(c echo.Context) error {
	var req putPoliciesRequest
	if err := s.decode(c, &req); err != nil {
		return err
	}
	if req.Policies == nil {
		return apperr.Invalidf("invalid_policy", "policies",
			`policies is required: an object of tool name to policy, e.g. {"policies": {"search": "never"}}`)
	}
	ctx := c.Request().Context()
	if err := s.policies.SetPolicies(ctx, c.Param("serverId"), req.Policies); err != nil {
		return err
	}
	tools, err := s.policies.Tools(ctx, c.Param("serverId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toolsResponse{Tools: tools})
}
