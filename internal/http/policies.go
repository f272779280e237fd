package http

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/policy"
)

func (s *Server) listTools(c echo.Context) error {
	tools, err := s.policies.Policies.Tools(c.Request().Context(), c.Param("serverId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toolsResponse{Tools: tools})
}

func (s *Server) listPolicies(c echo.Context) error {
	pols, err := s.policies.Policies.Policies(c.Request().Context(), c.Param("serverId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, policiesResponse{Policies: pols})
}

type putPolicyRequest struct {
	Policy *string `json:"policy"`
	Locked *bool   `json:"locked"`
}

// toolName is the {toolName} path parameter, path-unescaped. A tool name
// may hold any character ('/', '%', spaces, ...), and Echo hands the
// parameter over raw or decoded depending on whether the path needed a raw
// form, so it is read from the escaped path (the segment before
// "approval-policy") and unescaped here, once.
func toolName(c echo.Context) (string, error) {
	return toolNameAt(c, 2)
}

// toolNameAt is toolName for a route whose {toolName} is the segment
// fromEnd segments before the end (2: .../{toolName}/rules).
func toolNameAt(c echo.Context, fromEnd int) (string, error) {
	segs := strings.Split(c.Request().URL.EscapedPath(), "/")
	raw := c.Param("toolName")
	if len(segs) >= fromEnd {
		raw = segs[len(segs)-fromEnd]
	}
	name, err := url.PathUnescape(raw)
	if err != nil {
		return "", apperr.Invalidf("invalid_tool_name", "tool_name",
			"the tool name in the path is not validly escaped; percent-encode it (got %q)", raw)
	}
	return name, nil
}

// layer is the ?layer= the caller asked for, or their role's default.
func layer(c echo.Context) (policy.Layer, error) {
	u, ok := auth.UserFrom(c.Request().Context())
	if !ok {
		return "", auth.Unauthenticated()
	}
	return policy.ParseLayer(u, c.QueryParam("layer"))
}

// policyTarget is the tool and layer a one-tool policy route addresses.
func policyTarget(c echo.Context) (string, policy.Layer, error) {
	name, err := toolName(c)
	if err != nil {
		return "", "", err
	}
	l, err := layer(c)
	return name, l, err
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
	name, l, err := policyTarget(c)
	if err != nil {
		return err
	}
	p := policy.Policy(*req.Policy)
	tool, err := s.policies.Policies.SetPolicy(c.Request().Context(), c.Param("serverId"), name,
		policy.PolicyChange{Layer: l, Policy: &p, Locked: req.Locked})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tool)
}

func (s *Server) deletePolicy(c echo.Context) error {
	name, l, err := policyTarget(c)
	if err != nil {
		return err
	}
	tool, err := s.policies.Policies.DeletePolicy(c.Request().Context(), c.Param("serverId"), name, l)
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
	l, err := layer(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.policies.Policies.SetPolicies(ctx, c.Param("serverId"), l, req.Policies); err != nil {
		return err
	}
	tools, err := s.policies.Policies.Tools(ctx, c.Param("serverId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toolsResponse{Tools: tools})
}

// clearPolicies removes every tool policy of a server in one layer: the
// caller's own by default, the workspace's with ?layer=workspace (admins).
func (s *Server) clearPolicies(c echo.Context) error {
	u, ok := auth.UserFrom(c.Request().Context())
	if !ok {
		return auth.Unauthenticated()
	}
	l, err := policy.ParseClearLayer(u, c.QueryParam("layer"))
	if err != nil {
		return err
	}
	out, err := s.policies.Policies.ClearPolicies(c.Request().Context(), c.Param("serverId"), l)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
