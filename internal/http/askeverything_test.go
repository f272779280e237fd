package http_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

func TestSettings_AskForEverythingMakesEveryToolAskUntilTurnedOff(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.setPolicy("demo", "get_forecast", "never")

	member, _ := e.newUser(auth.Member)
	if r := member.call("PUT", "/api/settings", map[string]any{"ask_everything": true}); r.status != 403 {
		t.Fatalf("a member turning on ask for everything: %d %s, want 403", r.status, r.body)
	}
	if r := e.anon().call("PUT", "/api/settings", map[string]any{"ask_everything": true}); r.status != 401 {
		t.Fatalf("no credentials: %d, want 401", r.status)
	}

	var set struct {
		AskEverything bool `json:"ask_everything"`
	}
	e.must(200, "PUT", "/api/settings", map[string]any{"ask_everything": true}, &set)
	if !set.AskEverything {
		t.Fatal("the switch did not stay on")
	}
	// A tool allowed to run without asking asks, and says why.
	s := e.send("", `get_forecast {"city": "Berlin"}`).ok(t)
	a := one[approval](t, s, "approval.required")
	if a.ToolName != "get_forecast" || a.AsksBecause.Source != "ask_everything" || a.AsksBecause.Reason != "ask_everything" {
		t.Errorf("approval %+v; want get_forecast asking because of ask_everything", a)
	}
	// Everyone sees it in the tool list too.
	if tl := member.tools("demo")["get_forecast"]; tl.EffectivePolicy != "always" {
		t.Errorf("the member's effective policy for get_forecast is %q, want always", tl.EffectivePolicy)
	}

	e.must(200, "PUT", "/api/settings", map[string]any{"ask_everything": false}, &set)
	s = e.send("", `get_forecast {"city": "Berlin"}`).ok(t)
	if got := all[approval](t, s, "approval.required"); len(got) != 0 {
		t.Errorf("with the switch off, get_forecast still asks: %+v", got)
	}
	n := 0
	for _, en := range e.audit() {
		if en.Action == "settings.update" && strings.Contains(string(en.After), `"ask_everything"`) {
			n++
		}
	}
	if n < 2 {
		t.Errorf("%d audited settings changes mention ask_everything, want both", n)
	}
}
