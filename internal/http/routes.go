package http

// routes lists the whole API. docs/openapi.yaml describes every route here;
// TestOpenAPI_DescribesEveryRoute fails when one is missing.
func (s *Server) routes() {
	e := s.echo
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	// Prometheus metrics, for METRICS_TOKEN only (metrics.go).
	e.GET("/metrics", s.getMetrics)

	// Accounts (auth.go, users.go, tokens.go). Every /api route but the
	// sign-in ones needs a session or a token; adminOnly: admins only.
	e.POST("/api/auth/login", s.login)
	e.POST("/api/auth/logout", s.logout)
	e.GET("/api/auth/me", s.me)
	e.GET("/api/auth/status", s.authStatus)
	e.POST("/api/auth/setup", s.setup)
	e.GET("/api/auth/link", s.useLink)
	e.GET("/api/auth/oidc/login", s.oidcLogin)
	e.GET("/api/auth/oidc/callback", s.oidcCallback)
	e.GET("/api/users", s.listUsers, s.adminOnly)
	e.POST("/api/users", s.createUser, s.adminOnly)
	e.PATCH("/api/users/:userId", s.updateUser, s.adminOnly)
	e.DELETE("/api/users/:userId", s.deleteUser, s.adminOnly)
	e.GET("/api/tokens", s.listTokens)
	e.POST("/api/tokens", s.createToken)
	e.DELETE("/api/tokens/:tokenId", s.deleteToken)

	e.GET("/api/mcp/servers", s.listServers)
	e.POST("/api/mcp/servers", s.createServer, s.adminOnly)
	e.GET("/api/mcp/servers/:serverId", s.getServer)
	e.PATCH("/api/mcp/servers/:serverId", s.updateServer, s.adminOnly)
	e.DELETE("/api/mcp/servers/:serverId", s.deleteServer, s.adminOnly)
	e.POST("/api/mcp/servers/:serverId/refresh", s.refreshServer, s.adminOnly)

	e.GET("/api/mcp/servers/:serverId/tools", s.listTools)
	e.GET("/api/mcp/servers/:serverId/tools/approval-policies", s.listPolicies)
	e.PUT("/api/mcp/servers/:serverId/tools/approval-policies", s.putPolicies)
	e.DELETE("/api/mcp/servers/:serverId/tools/approval-policies", s.clearPolicies)
	e.PUT("/api/mcp/servers/:serverId/tools/:toolName/approval-policy", s.putPolicy)
	e.DELETE("/api/mcp/servers/:serverId/tools/:toolName/approval-policy", s.deletePolicy)
	// Words and choices per tool (approvalcards.go): every signed-in user
	// reads them, admins change them.
	e.GET("/api/mcp/servers/:serverId/approval-cards", s.listApprovalCards)
	e.PUT("/api/mcp/servers/:serverId/tools/:toolName/approval-card", s.putApprovalCard, s.adminOnly)
	e.DELETE("/api/mcp/servers/:serverId/tools/:toolName/approval-card", s.deleteApprovalCard, s.adminOnly)

	// Argument rules (CEL; rules.go): every signed-in user reads them,
	// admins change them.
	e.GET("/api/mcp/servers/:serverId/tools/:toolName/rules", s.getRules)
	e.PUT("/api/mcp/servers/:serverId/tools/:toolName/rules", s.putRules, s.adminOnly)
	e.GET("/api/mcp/servers/:serverId/rules", s.getRules)
	e.PUT("/api/mcp/servers/:serverId/rules", s.putRules, s.adminOnly)
	e.GET("/api/rules", s.getRules)
	e.PUT("/api/rules", s.putRules, s.adminOnly)
	e.POST("/api/rules/test", s.testRules)
	// Candidate rules over the tool's recent requests (ruletry.go): the
	// caller's own, every one for an admin.
	e.POST("/api/mcp/servers/:serverId/tools/:toolName/rules/try", s.tryRules)

	// Decision hooks (decisionhooks.go): endpoints asked before a card
	// shows, per server and for the workspace; admins only.
	e.GET("/api/mcp/servers/:serverId/decision-hook", s.getDecisionHook, s.adminOnly)
	e.PUT("/api/mcp/servers/:serverId/decision-hook", s.putDecisionHook, s.adminOnly)
	e.DELETE("/api/mcp/servers/:serverId/decision-hook", s.deleteDecisionHook, s.adminOnly)
	e.POST("/api/mcp/servers/:serverId/decision-hook/test", s.testDecisionHook, s.adminOnly)
	e.GET("/api/decision-hook", s.getDecisionHook, s.adminOnly)
	e.PUT("/api/decision-hook", s.putDecisionHook, s.adminOnly)
	e.DELETE("/api/decision-hook", s.deleteDecisionHook, s.adminOnly)
	e.POST("/api/decision-hook/test", s.testDecisionHook, s.adminOnly)

	e.GET("/api/settings", s.getSettings)
	e.PUT("/api/settings", s.putSettings, s.adminOnly)
	e.GET("/api/audit", s.listAudit)
	// The audit log as JSON lines (audit.go): the same entries, all pages.
	e.GET("/api/audit/export", s.exportAudit)
	// Approval statistics per tool, from the audit log (approvalstats.go):
	// admins only.
	e.GET("/api/approvals/stats", s.approvalStats, s.adminOnly)
	// The inbox (inbox.go): what waits for the caller across their chats
	// and agents, a decision on one by its id, and a stream of changes.
	// Each caller's own only: another person's request is not found.
	e.GET("/api/approvals", s.listApprovals)
	e.POST("/api/approvals/:approvalRequestId/decision", s.decideApproval)
	e.GET("/api/approvals/events", s.approvalEvents)

	// Outbound webhooks (webhooks.go): admins only.
	e.GET("/api/webhooks", s.listWebhooks, s.adminOnly)
	e.POST("/api/webhooks", s.createWebhook, s.adminOnly)
	e.GET("/api/webhooks/:webhookId", s.getWebhook, s.adminOnly)
	e.PATCH("/api/webhooks/:webhookId", s.updateWebhook, s.adminOnly)
	e.DELETE("/api/webhooks/:webhookId", s.deleteWebhook, s.adminOnly)
	e.POST("/api/webhooks/:webhookId/test", s.testWebhook, s.adminOnly)
	e.GET("/api/webhooks/:webhookId/deliveries", s.webhookDeliveries, s.adminOnly)

	// Signed one-time approve and deny links (approvallinks.go): no
	// session needed, the token in the body decides as its person.
	e.POST("/api/approval-links/view", s.viewApprovalLink)
	e.POST("/api/approval-links/decision", s.decideByApprovalLink)

	e.GET("/api/info", s.info)
	e.POST("/api/conversations", s.createConversation)
	e.GET("/api/conversations", s.listConversations)
	e.GET("/api/conversations/:conversationId", s.getConversation)
	e.PATCH("/api/conversations/:conversationId", s.renameConversation)
	e.DELETE("/api/conversations/:conversationId", s.deleteConversation)
	e.POST("/api/conversations/:conversationId/cancel", s.cancelConversation)
	// Which servers and tools the conversation offers (chat.go). Owner only.
	e.GET("/api/conversations/:conversationId/tools", s.getConversationTools)
	e.PUT("/api/conversations/:conversationId/tools", s.putConversationTools)

	// Grants (grants.go): "for this conversation" and "for 1 hour"
	// approvals, each user's own (another's is not found).
	e.GET("/api/conversations/:conversationId/grants", s.listConversationGrants)
	e.GET("/api/grants", s.listGrants)
	e.DELETE("/api/grants/:grantId", s.revokeGrant)

	// Server-sent event streams: no timeout middleware, heartbeats instead.
	// Both take an Idempotency-Key (idempotency.go).
	e.POST("/api/responses", s.postResponse, s.idempotent)
	e.POST("/api/responses/approval-response", s.postApprovalResponse, s.idempotent)
	e.POST("/api/conversations/:conversationId/retry", s.retryConversation)
	// A conversation's events, replayed after Last-Event-ID and then live,
	// from whichever replica runs its turn (sse.go). Owner only.
	e.GET("/api/conversations/:conversationId/events", s.conversationEvents)
	// Settings changes, from every replica, as they commit: each signed-in
	// caller hears only of what they may see (settingsevents.go).
	e.GET("/api/settings/events", s.settingsEvents)

	// The MCP face (mcpface.go): each registered server at /mcp/{label}
	// for the model's provider, by capability token only, never by a
	// session.
	e.Match(mcpFaceMethods, "/mcp/:label", s.serveMCPFace)
	// The same face for a person's own MCP clients (mcpface.go): every
	// server at /mcp, tools named {server_label}__{tool}, by API token.
	e.Match(mcpFaceMethods, "/mcp", s.serveMCPFace)

	// The web app (embedded in the binary, or WEB_DIR; web.go): files, and
	// index.html for its own routes.
	e.GET("/*", s.webApp)
	e.HEAD("/*", s.webApp)
}
