package http_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/responses"
)

// In gateway mode no request Toolgate sends the provider carries an MCP
// server's real URL or a stored header value: every tool entry names the
// face with a capability token for the request's conversation, turn and
// server, and the server (which only answers its stored token) sees every
// call arrive through the face, the approved one included.
func TestRoute_GatewaySendsTheProviderNoServerSecrets(t *testing.T) {
	e := newAPIWith(t, envOptions{gateway: true})

	const (
		serverToken = "server-token-4c1d9e7a"
		tenant      = "tenant-secret-82b0"
		urlSecret   = "url-secret-5e1a77"
	)
	demo := demomcp.New(demomcp.Options{Token: serverToken})
	demoSrv := httptest.NewServer(demo.Handler())
	t.Cleanup(demoSrv.Close)
	realURL := demoSrv.URL + "/mcp?key=" + urlSecret
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "crm", "url": realURL, "description": "Forecasts",
		"headers": map[string]string{"Authorization": "Bearer " + serverToken, "X-Tenant": tenant}}, nil)
	e.trustHints("crm")
	e.setPolicy("crm", "get_forecast", "never")
	e.setPolicy("crm", "delete_forecast", "always")

	// A tool that runs unasked, then one that asks and runs once approved.
	s := e.send("", `get_forecast {"city": "Berlin"}`).ok(t)
	conv, firstTurn := s.conv(t), one[convEvent](t, s, "conversation").TurnID
	if !strings.Contains(lastMessage(t, s), "Light rain") {
		t.Fatalf("get_forecast did not run through the face: %q (events %v)", lastMessage(t, s), s.names())
	}
	s = e.send(conv, `delete_forecast {"city": "Oslo"}`).ok(t)
	ap := one[approval](t, s, "approval.required")
	if _, ok := demo.State().Forecasts["Oslo"]; !ok {
		t.Fatal("Oslo was deleted before anyone approved")
	}
	e.decide(conv, ap.ID, true, nil).ok(t)
	if _, ok := demo.State().Forecasts["Oslo"]; ok {
		t.Fatal("the approved delete_forecast did not run through the face")
	}

	// What the provider got: no real URL, no stored header value, in any
	// request (the follow-up with the approval included).
	raws := e.up.sentRaw()
	if len(raws) < 3 {
		t.Fatalf("%d requests reached the provider, want at least 3", len(raws))
	}
	u, _ := url.Parse(demoSrv.URL)
	for i, raw := range raws {
		for _, secret := range []string{u.Host, "127.0.0.1:" + u.Port(), urlSecret, serverToken, tenant, "X-Tenant"} {
			if bytes.Contains(raw, []byte(secret)) {
				t.Errorf("request %d to the provider carries %q:\n%s", i, secret, raw)
			}
		}
		var body struct {
			Metadata map[string]string `json:"metadata"`
			Tools    []struct {
				Label   string            `json:"server_label"`
				URL     string            `json:"server_url"`
				Headers map[string]string `json:"headers"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatal(err)
		}
		if len(body.Tools) != 1 {
			t.Fatalf("request %d offers %d tool entries, want 1", i, len(body.Tools))
		}
		entry := body.Tools[0]
		if entry.URL != e.url+"/mcp/crm" {
			t.Errorf("request %d: server_url %q, want the face %s/mcp/crm", i, entry.URL, e.url)
		}
		c, err := e.tokens.Verify(gateway.BearerToken(entry.Headers["Authorization"]))
		if err != nil || len(entry.Headers) != 1 {
			t.Fatalf("request %d: headers %v: %v", i, entry.Headers, err)
		}
		if c.ConversationID != conv || c.TurnID != body.Metadata[responses.MetadataTurn] || c.ServerLabel != "crm" {
			t.Errorf("request %d: token bound to %+v, want conversation %s, turn %s, server crm", i, c, conv, body.Metadata[responses.MetadataTurn])
		}
		if i == 0 && c.TurnID != firstTurn {
			t.Errorf("the first request's token is for turn %s, want %s", c.TurnID, firstTurn)
		}
	}

	// What the server saw: both calls arrived through the face (the
	// transcript holds the face's record of each, with the turn that ran
	// it), each ran once, and nothing was refused.
	if e.faceHits.count("crm") < 2 {
		t.Errorf("%d requests reached the face for crm, want the listings and both calls", e.faceHits.count("crm"))
	}
	tr := e.transcript(conv)
	var viaFace []string
	for _, it := range tr.Items {
		if it.Type == "mcp_call" {
			if it.Via != "gateway" || it.Call == nil || it.Call.State != "done" || it.Call.Refusal != nil {
				t.Errorf("call %s did not pass the face as done: via %q, record %+v", it.Name, it.Via, it.Call)
				continue
			}
			viaFace = append(viaFace, it.Name+"@"+it.Call.TurnID)
			if it.Name == "get_forecast" && it.Call.TurnID != firstTurn {
				t.Errorf("get_forecast ran with a token of turn %s, want %s", it.Call.TurnID, firstTurn)
			}
		}
	}
	if len(viaFace) != 2 {
		t.Errorf("calls through the face: %v, want get_forecast and delete_forecast", viaFace)
	}
	if st := demo.State(); st.Calls["get_forecast"] != 1 || st.Calls["delete_forecast"] != 1 {
		t.Errorf("the server ran %v, want each tool once", st.Calls)
	}
}

// In direct mode (no face) the entries carry the server's URL and headers,
// as before: the provider calls the server itself.
func TestRoute_DirectSendsTheServer(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.setPolicy("demo", "get_forecast", "never")
	e.send("", `get_forecast {"city": "Berlin"}`).ok(t)
	raws := e.up.sentRaw()
	if len(raws) != 1 || !bytes.Contains(raws[0], []byte(`"server_url":"`+e.demoURL+`"`)) || bytes.Contains(raws[0], []byte("tgc_")) {
		t.Errorf("direct request:\n%s", raws)
	}
}
