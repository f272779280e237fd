package termchat

import (
	"bytes"
	"strings"
	"testing"
)

// TestViewer_SaysRefusedNotRunAndUnknownApart: a call Toolgate's MCP face
// refused prints its sentence (the server's for a code the client does not
// know), one that never reached the server says it did not run, one that ran
// names the definition it ran against, and the decision lines of an approval
// that did not run and of one whose outcome is unknown (a crash between
// forwarding and storing) say different things.
func TestViewer_SaysRefusedNotRunAndUnknownApart(t *testing.T) {
	const digest = "3f9a1c0b7e2d5a4c6b8e0f1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d5e4f3"
	call := func(name, face string) string {
		return `{"item":{"type":"mcp_call","id":"mcp_` + name + `","server_label":"demo","name":"` + name + `","allowed_by":{"kind":"approval"},"call":` + face + `}}`
	}
	decided := func(tool, state string) string {
		return `{"approval_request_id":"mcpr_` + tool + `","server_label":"demo","tool_name":"` + tool + `","state":"` + state +
			`","reason":"Toolgate's own words","scope":"once","remember":false,"policy_changed":null}`
	}
	for _, tc := range []struct {
		name, event, data string
		want              string
		not               []string
	}{
		{"refused, a known code", "item.done",
			call("rug", `{"state":"refused","definition_digest":"`+digest+`","refusal":{"code":"definition_changed","message":"x"}}`),
			"· refused rug on demo: changed since you allowed it: approve again\n", []string{"ran", "(approved)"}},
		{"refused, blocked", "item.done",
			call("rug", `{"state":"refused","definition_digest":"`+digest+`","refusal":{"code":"blocked","message":"x"}}`),
			"· refused rug on demo: blocked by the workspace\n", nil},
		{"refused, a code the client does not know: the server's sentence, cleaned", "item.done",
			call("rug", `{"state":"refused","definition_digest":"`+digest+`","refusal":{"code":"new","message":"try later\u001b[2J"}}`),
			"· refused rug on demo: try later\\x1b[2J\n", nil},
		{"not run", "item.done",
			call("get_forecast", `{"state":"not_run","definition_digest":"`+digest+`"}`),
			"· get_forecast on demo did not run: the call never reached the server\n", []string{"may have run", "refused"}},
		{"ran through the face", "item.done",
			call("delete_forecast", `{"state":"done","definition_digest":"`+digest+`","is_error":false}`),
			"· ran delete_forecast on demo through Toolgate (definition 3f9a1c0b7e2d…) (approved)\n", []string{digest}},
		{"an error result", "item.done",
			call("delete_forecast", `{"state":"done","definition_digest":"`+digest+`","is_error":true}`),
			"· delete_forecast on demo failed through Toolgate (definition 3f9a1c0b7e2d…) (approved)\n", nil},
		{"sent, no result", "item.done",
			call("delete_forecast", `{"state":"failed","definition_digest":"`+digest+`"}`),
			"· delete_forecast on demo was sent through Toolgate (definition 3f9a1c0b7e2d…), but no result came back: it may have run (approved)\n", nil},
		{"decision: not run", "decision.recorded", decided("t1", "not_run"),
			"· t1 on demo: approved, but it did not run: Toolgate knows the call never reached its server", []string{"may have run", "crashed", "Toolgate's own words"}},
		{"decision: outcome unknown", "decision.recorded", decided("t2", "outcome_unknown"),
			"· t2 on demo: outcome unknown: Toolgate crashed between forwarding the call to its server and storing its result: the tool may have run.",
			[]string{"did not run", "Toolgate's own words"}},
		{"decision: approved stays as it was", "decision.recorded", decided("t3", "approved"),
			"· t3 on demo: approved: \"Toolgate's own words\"\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			v := &viewer{s: &session{out: &term{w: &out}}, asked: map[string]approval{}}
			v.event(Event{Name: tc.event, Data: []byte(tc.data)})
			got := out.String()
			if !strings.Contains(got, tc.want) {
				t.Errorf("printed %q\nwant it to contain %q", got, tc.want)
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("printed %q\nwhich should not contain %q", got, n)
				}
			}
		})
	}
}
