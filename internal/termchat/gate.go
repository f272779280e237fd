package termchat

import "fmt"

// faceCall is what Toolgate's MCP face saw of a call (docs/openapi.yaml
// GatewayCall), on an mcp_call item: the definition it was checked against,
// and whether it ran, was refused or provably never reached the server.
type faceCall struct {
	State            string `json:"state"`
	DefinitionDigest string `json:"definition_digest"`
	IsError          bool   `json:"is_error"`
	Refusal          *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"refusal"`
}

// refusalWords are the web app's sentences for the face's refusal codes
// (frontend/src/i18n/locales/en/chat.json, gate.refusal); a code not listed
// shows the server's own sentence.
var refusalWords = map[string]string{
	"definition_changed": "changed since you allowed it: approve again",
	"blocked":            "blocked by the workspace",
	"not_approved":       "not approved",
	"unknown_tool":       "the server does not list this tool",
	"turn_over":          "the turn it belonged to was over",
	"server_unavailable": "the server is disabled or gone",
	"gate_unavailable":   "Toolgate could not check the call, so it did not run",
}

// refusalText is why the face refused a call, cleaned for the terminal.
func (c *faceCall) refusalText() string {
	if c.Refusal == nil {
		return "Toolgate refused the call"
	}
	if w, ok := refusalWords[c.Refusal.Code]; ok {
		return w
	}
	if c.Refusal.Message != "" {
		return line(c.Refusal.Message)
	}
	return line(c.Refusal.Code)
}

// shortDigest is a definition digest as the web app shows it: its first 12
// hex digits and an ellipsis.
func shortDigest(d string) string {
	if len(d) > 12 {
		return line(d[:12]) + "…"
	}
	return line(d)
}

// callLine is the one line for a call the face saw: refused (with the
// sentence), not run, sent but no result (it may have run), or ran (failed)
// against its definition. tool is "name on server"; why says what allowed it.
func (c *faceCall) callLine(tool, why string) string {
	def := shortDigest(c.DefinitionDigest)
	switch c.State {
	case "refused":
		return fmt.Sprintf("· refused %s: %s", tool, c.refusalText())
	case "not_run":
		return fmt.Sprintf("· %s did not run: the call never reached the server", tool)
	case "failed":
		return fmt.Sprintf("· %s was sent through Toolgate (definition %s), but no result came back: it may have run%s", tool, def, why)
	case "running":
		return fmt.Sprintf("· running %s through Toolgate (definition %s)%s", tool, def, why)
	}
	if c.IsError {
		return fmt.Sprintf("· %s failed through Toolgate (definition %s)%s", tool, def, why)
	}
	return fmt.Sprintf("· ran %s through Toolgate (definition %s)%s", tool, def, why)
}

// decisionOutcome is what the line of a decision.recorded says for an
// approval that did not run or whose outcome is unknown, in the web card's
// words (decided.outcome.not_run, decided.outcome.outcome_unknown); "" for
// other states.
func decisionOutcome(state string) string {
	switch state {
	case "not_run":
		return "approved, but it did not run: Toolgate knows the call never reached its server " +
			"(the approval never reached the model's provider, or the call was refused or failed before it reached the server). " +
			"The conversation can go on; the model may ask again."
	case "outcome_unknown":
		return "outcome unknown: Toolgate crashed between forwarding the call to its server and storing its result: the tool may have run. " +
			"It is never sent again on its own; check what it did, and ask for it again if it should run."
	}
	return ""
}
