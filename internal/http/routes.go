package http

// routes lists the whole API. docs/openapi.yaml describes every route here;
// TestOpenAPI_DescribesEveryRoute fails when one is missing.
func (s *Server) routes() {
	e := s.echo
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)

	e.GET("/api/mcp/servers", s.listServers)
	e.POST("/api/mcp/servers", s.createServer)
	e.GET("/api/mcp/servers/:serverId", s.getServer)
	e.PATCH("/api/mcp/servers/:serverId", s.updateServer)
	e.DELETE("/api/mcp/servers/:serverId", s.deleteServer)
	e.POST("/api/mcp/servers/:serverId/refresh", s.refreshServer)

	e.GET("/api/mcp/servers/:serverId/tools", s.listTools)
	e.GET("/api/mcp/servers/:serverId/tools/approval-policies", s.listPolicies)
	e.PUT("/api/mcp/servers/:serverId/tools/approval-policies", s.putPolicies)
	e.PUT("/api/mcp/servers/:serverId/tools/:toolName/approval-policy", s.putPolicy)
	e.DELETE("/api/mcp/servers/:serverId/tools/:toolName/approval-policy", s.deletePolicy)

	e.GET("/api/settings", s.getSettings)
	e.PUT("/api/settings", s.putSettings)
	e.GET("/api/audit", s.listAudit)

	e.GET("/api/info", s.info)
	e.POST("/api/conversations", s.createConversation)
	e.GET("/api/conversations", s.listConversations)
	e.GET("/api/conversations/:conversationId", s.getConversation)
	e.PATCH("/api/conversations/:conversationId", s.renameConversation)
	e.DELETE("/api/conversations/:conversationId", s.deleteConversation)
	e.POST("/api/conversations/:conversationId/cancel", s.cancelConversation)

	// Server-sent event streams: no timeout middleware, heartbeats instead.
	e.POST("/api/responses", s.postResponse)
	e.POST("/api/responses/approval-response", s.postApprovalResponse)
	e.POST("/api/conversations/:conversationId/retry", s.retryConversation)

	// The web app (frontend/dist): files, and index.html for its own routes.
	e.GET("/*", s.webApp)
	e.HEAD("/*", s.webApp)
}
