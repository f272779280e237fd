package engine_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/book"
	"github.com/toolgate/toolgate/internal/policy"
)

// mcpEntry is one MCP tool entry of a request as the provider received it.
type mcpEntry struct {
	Type         string   `json:"type"`
	ServerLabel  string   `json:"server_label"`
	AllowedTools []string `json:"allowed_tools"`
}

// lastTools are the MCP entries of the last request the provider received.
func (e *harness) lastTools() []mcpEntry {
	e.t.Helper()
	bodies := e.up.sent()
	if len(bodies) == 0 {
		e.t.Fatal("the provider received no request")
	}
	var req struct {
		Tools []mcpEntry `json:"tools"`
	}
	if err := json.Unmarshal(bodies[len(bodies)-1], &req); err != nil {
		e.t.Fatal(err)
	}
	return req.Tools
}

func entryOf(entries []mcpEntry, label string) *mcpEntry {
	for i := range entries {
		if entries[i].ServerLabel == label {
			return &entries[i]
		}
	}
	return nil
}

func (e *harness) setTools(conv string, sel policy.Selection) book.Tools {
	e.t.Helper()
	got, err := e.chat.Book().SetTools(as(e.t.Context(), ana), conv, sel)
	if err != nil {
		e.t.Fatalf("SetTools: %v", err)
	}
	return got
}

// A tool deselected for a conversation is not offered upstream (it is left
// out of the server's allowed_tools), so the model cannot run it even when
// the message names it; a deselected server is not sent at all; other
// conversations are untouched.
func TestConversationTools_DeselectedToolIsNeverOffered(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, _ := e.send(ana, "", "hello")
	if entry := entryOf(e.lastTools(), "demo"); entry == nil || (entry.AllowedTools != nil && !slices.Contains(entry.AllowedTools, "get_forecast")) {
		t.Fatalf("before any choice the request offers demo as %+v; want get_forecast among its tools", entry)
	}

	all, err := e.chat.Book().Tools(as(t.Context(), ana), conv)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Available) != 1 || all.Available[0].Label != "demo" || !all.Available[0].Enabled {
		t.Fatalf("available %+v; want demo, enabled", all.Available)
	}
	var rest []string
	for _, tc := range all.Available[0].Tools {
		if !tc.Selected {
			t.Errorf("tool %s not selected before any choice", tc.Name)
		}
		if tc.Name != "get_forecast" {
			rest = append(rest, tc.Name)
		}
	}
	if len(rest) == len(all.Available[0].Tools) {
		t.Fatalf("get_forecast is not among demo's tools %+v", all.Available[0].Tools)
	}

	got := e.setTools(conv, policy.Selection{Servers: map[string]policy.ServerSelection{"demo": {Enabled: true, Tools: rest}}})
	for _, tc := range got.Available[0].Tools {
		if tc.Selected != (tc.Name != "get_forecast") {
			t.Errorf("after deselecting get_forecast, %s selected %v", tc.Name, tc.Selected)
		}
	}
	if tr := e.transcript(ana, conv); !slices.Equal(tr.Conversation.Tools.Servers["demo"].Tools, rest) {
		t.Errorf("the conversation resource's tools %+v; want demo with %v", tr.Conversation.Tools, rest)
	}

	_, rec := e.send(ana, conv, `get_forecast {"city": "Berlin"}`)
	entry := entryOf(e.lastTools(), "demo")
	if entry == nil || entry.AllowedTools == nil || slices.Contains(entry.AllowedTools, "get_forecast") {
		t.Fatalf("the request offered demo as %+v; want allowed_tools without get_forecast", entry)
	}
	if n := rec.count(conversation.EventNameApproval) + rec.count(conversation.EventNameToolStarted); n != 0 {
		t.Errorf("the turn asked for or started %d tools (%v); want none", n, rec.names())
	}
	if calls := e.demo.State().Calls["get_forecast"]; calls != 0 {
		t.Errorf("get_forecast ran %d times; a deselected tool must never run", calls)
	}

	// Another conversation of the same person still offers it, and the model calls it there.
	e.send(ana, "", `get_forecast {"city": "Berlin"}`)
	if calls := e.demo.State().Calls["get_forecast"]; calls != 1 {
		t.Errorf("get_forecast ran %d times in a conversation that did not deselect it; want 1", calls)
	}

	e.setTools(conv, policy.Selection{Servers: map[string]policy.ServerSelection{"demo": {Enabled: false}}})
	e.send(ana, conv, `get_forecast {"city": "Bonn"}`)
	if tools := e.lastTools(); entryOf(tools, "demo") != nil {
		t.Errorf("a deselected server was sent: %+v", tools)
	}
	if calls := e.demo.State().Calls["get_forecast"]; calls != 1 {
		t.Errorf("get_forecast ran %d times; want still 1", calls)
	}

	// Selecting a server's tools, none of them, leaves it out too.
	e.setTools(conv, policy.Selection{Servers: map[string]policy.ServerSelection{"demo": {Enabled: true, Tools: []string{}}}})
	e.send(ana, conv, "hello again")
	if tools := e.lastTools(); entryOf(tools, "demo") != nil {
		t.Errorf("a server with no tools selected was sent: %+v", tools)
	}

	// Back to everything: offered again.
	e.setTools(conv, policy.Selection{})
	e.send(ana, conv, `get_forecast {"city": "Köln"}`)
	if calls := e.demo.State().Calls["get_forecast"]; calls != 2 {
		t.Errorf("get_forecast ran %d times after selecting everything again; want 2", calls)
	}
}

// A conversation created with a choice offers only that from its first message on.
func TestConversationTools_ChosenBeforeTheFirstMessage(t *testing.T) {
	e := newEngine(t, engineOptions{})
	c, err := e.chat.Book().CreateWith(as(t.Context(), ana), "", &policy.Selection{Servers: map[string]policy.ServerSelection{"demo": {Enabled: false}}})
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := c.Tools.Servers["demo"]; !ok || s.Enabled {
		t.Fatalf("created conversation's tools %+v; want demo off", c.Tools)
	}
	e.send(ana, c.ID, `get_forecast {"city": "Berlin"}`)
	if tools := e.lastTools(); entryOf(tools, "demo") != nil {
		t.Errorf("the first request offered the deselected server: %+v", tools)
	}
	if calls := e.demo.State().Calls["get_forecast"]; calls != 0 {
		t.Errorf("get_forecast ran %d times; want none", calls)
	}
}

// Unknown servers and tools are refused with their codes and change nothing;
// another user's conversation is not found, whatever the choice.
func TestConversationTools_RefusesUnknownNamesAndOtherUsers(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, _ := e.send(ana, "", "hello")
	for _, c := range []struct {
		sel  policy.Selection
		code string
	}{
		{policy.Selection{Servers: map[string]policy.ServerSelection{"nope": {Enabled: true}}}, "unknown_server"},
		{policy.Selection{Servers: map[string]policy.ServerSelection{"demo": {Enabled: true, Tools: []string{"get_forecast", "launch_rockets"}}}}, "unknown_tool"},
	} {
		_, err := e.chat.Book().SetTools(as(t.Context(), ana), conv, c.sel)
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Kind != apperr.Invalid || ae.Code != c.code {
			t.Errorf("SetTools(%+v): %v; want invalid %s", c.sel, err, c.code)
		}
		if _, err := e.chat.Book().CreateWith(as(t.Context(), ana), "", &c.sel); apperr.KindOf(err) != apperr.Invalid {
			t.Errorf("CreateWith(%+v): %v; want invalid", c.sel, err)
		}
	}
	if tr := e.transcript(ana, conv); len(tr.Conversation.Tools.Servers) != 0 {
		t.Errorf("refused choices were stored: %+v", tr.Conversation.Tools)
	}
	off := policy.Selection{Servers: map[string]policy.ServerSelection{"demo": {Enabled: false}}}
	if _, err := e.chat.Book().SetTools(as(t.Context(), ben), conv, off); apperr.KindOf(err) != apperr.NotFound {
		t.Errorf("ben's SetTools on ana's conversation: %v; want not found", err)
	}
	if _, err := e.chat.Book().Tools(as(t.Context(), ben), conv); apperr.KindOf(err) != apperr.NotFound {
		t.Errorf("ben's Tools on ana's conversation: %v; want not found", err)
	}
	if tr := e.transcript(ana, conv); len(tr.Conversation.Tools.Servers) != 0 {
		t.Errorf("ben changed ana's choice: %+v", tr.Conversation.Tools)
	}
}
