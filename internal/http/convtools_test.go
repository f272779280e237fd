package http_test

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

type convTools struct {
	Servers map[string]struct {
		Enabled bool      `json:"enabled"`
		Tools   *[]string `json:"tools"`
	} `json:"servers"`
	Available []struct {
		Label   string `json:"label"`
		Enabled bool   `json:"enabled"`
		Tools   []struct {
			Name     string `json:"name"`
			Policy   string `json:"policy"`
			Selected bool   `json:"selected"`
		} `json:"tools"`
	} `json:"available"`
}

// GET/PUT /api/conversations/{id}/tools: the owner reads and replaces the
// choice (also given on create, and shown in the conversation resource);
// unknown names are 400 with their codes and change nothing; anonymous
// callers get 401 and another user 404, whatever the body.
func TestConversationTools_API(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	var conv struct {
		ID    string          `json:"id"`
		Tools json.RawMessage `json:"tools"`
	}
	e.must(201, "POST", "/api/conversations", map[string]any{"title": "t"}, &conv)
	if string(conv.Tools) != `{"servers":{}}` {
		t.Errorf("a new conversation's tools %s; want {\"servers\":{}}", conv.Tools)
	}
	path := "/api/conversations/" + conv.ID + "/tools"

	var got convTools
	e.must(200, "GET", path, nil, &got)
	if len(got.Available) != 1 || got.Available[0].Label != "weather" || !got.Available[0].Enabled || len(got.Available[0].Tools) == 0 {
		t.Fatalf("available %+v; want weather, enabled, with its tools", got.Available)
	}

	e.must(200, "PUT", path, map[string]any{"servers": map[string]any{"weather": map[string]any{"tools": []string{"list_forecasts", "get_forecast", "get_forecast"}}}}, &got)
	w := got.Servers["weather"]
	if !w.Enabled || w.Tools == nil || len(*w.Tools) != 2 || (*w.Tools)[0] != "get_forecast" {
		t.Errorf("stored %+v; want enabled (the default) with [get_forecast list_forecasts]", w)
	}
	for _, tc := range got.Available[0].Tools {
		if tc.Selected != (tc.Name == "get_forecast" || tc.Name == "list_forecasts") {
			t.Errorf("%s selected %v", tc.Name, tc.Selected)
		}
	}
	var tr struct {
		Conversation struct {
			Tools convTools `json:"tools"`
		} `json:"conversation"`
	}
	e.must(200, "GET", "/api/conversations/"+conv.ID, nil, &tr)
	if ws := tr.Conversation.Tools.Servers["weather"]; ws.Tools == nil || len(*ws.Tools) != 2 {
		t.Errorf("the conversation resource's tools %+v; want the choice", tr.Conversation.Tools)
	}

	for body, code := range map[string]string{
		`{"servers": {"nope": {"enabled": false}}}`:                      "unknown_server",
		`{"servers": {"weather": {"tools": ["get_forecast", "rm_rf"]}}}`: "unknown_tool",
		`{"servers": {"weather": {"enabled": "yes"}}}`:                   "",
		`{"servers": {"weather": {"enabld": false}}}`:                    "",
		`{"available": []}`: "unknown_field",
	} {
		res := e.call("PUT", path, body)
		var ae apiError
		_ = json.Unmarshal(res.body, &ae)
		if res.status != 400 || (code != "" && ae.Error.Code != code) || ae.Error.Message == "" {
			t.Errorf("PUT %s: %d %s; want 400 %s with a message", body, res.status, res.body, code)
		}
	}
	if res := e.call("POST", "/api/conversations", `{"tools": {"servers": {"nope": {"enabled": false}}}}`); res.status != 400 {
		t.Errorf("create with an unknown server: %d %s; want 400", res.status, res.body)
	}
	e.must(200, "GET", path, nil, &got)
	if ws := got.Servers["weather"]; ws.Tools == nil || len(*ws.Tools) != 2 || len(got.Servers) != 1 {
		t.Errorf("refused bodies changed the choice: %+v", got.Servers)
	}

	var created struct {
		ID    string    `json:"id"`
		Tools convTools `json:"tools"`
	}
	e.must(201, "POST", "/api/conversations", `{"tools": {"servers": {"weather": {"enabled": false}}}}`, &created)
	if ws, ok := created.Tools.Servers["weather"]; !ok || ws.Enabled {
		t.Errorf("created with weather off: %+v", created.Tools)
	}

	other, _ := e.newUser(auth.Member)
	if res := other.call("GET", path, nil); res.status != 404 {
		t.Errorf("another user's GET: %d; want 404", res.status)
	}
	for _, body := range []string{`{"servers": {"weather": {"enabled": false}}}`, `{"servers": {"nope": {}}}`} {
		if res := other.call("PUT", path, body); res.status != 404 {
			t.Errorf("another user's PUT %s: %d; want 404", body, res.status)
		}
	}
	if res := e.anon().call("GET", path, nil); res.status != 401 {
		t.Errorf("anonymous GET: %d; want 401", res.status)
	}
	if res := e.anon().call("PUT", path, `{"servers": {}}`); res.status != 401 {
		t.Errorf("anonymous PUT: %d; want 401", res.status)
	}
	e.must(200, "GET", path, nil, &got)
	if ws := got.Servers["weather"]; !ws.Enabled || ws.Tools == nil {
		t.Errorf("other callers changed the choice: %+v", got.Servers)
	}
}
