package responses_test

// Every recorded OpenAI stream is served over HTTP and read through
// Client.Stream, the code path live traffic takes.

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/responses"
)

// wantCall is an mcp_call or mcp_approval_request as a recording holds it.
type wantCall struct {
	ID, Name, Args, ApprovalID, OutputPrefix string
}

type wantStream struct {
	file      string
	resp      string
	items     []string // "type id" of the converted items, in order
	label     string   // the server label of the MCP items
	tools     []string // the listed tools' names
	approvals []wantCall
	calls     []wantCall
	text      string // the final text starts with this ("" : no message)
}

var recordedStreams = []wantStream{{
	file:  "vercel-ai_openai-mcp-tool-approval.1.chunks.jsonl",
	resp:  "resp_04a97b4fce127879006949a837a3a48195b37f26ae73f550c0",
	items: []string{"mcp_list_tools mcpl_04a97b4fce127879006949a837ada08195abf62939840a3d5c", "mcp_approval_request mcpr_04a97b4fce127879006949a83ac9308195a7f7b69ea82e91fe"},
	label: "zip1",
	tools: []string{"create_short_url", "get_url_stats", "validate_url", "generate_short_code"},
	approvals: []wantCall{{ID: "mcpr_04a97b4fce127879006949a83ac9308195a7f7b69ea82e91fe", Name: "create_short_url",
		Args: `{"alias":"","description":"Shortened link for ai-sdk.dev","max_clicks":100,"password":"","url":"https://ai-sdk.dev/"}`}},
}, {
	file:  "vercel-ai_openai-mcp-tool-approval.2.chunks.jsonl",
	resp:  "resp_04a97b4fce127879006949a855fa68819598a2a379fd5b6c38",
	items: []string{"mcp_list_tools mcpl_04a97b4fce127879006949a856328881959cdd5fda3bc888e8", "message msg_04a97b4fce127879006949a85c36b08195b7527e9fb2f8569e"},
	label: "zip1",
	tools: []string{"create_short_url", "get_url_stats", "validate_url", "generate_short_code"},
	text:  "I wasn’t able to create the short link because the URL-shortening tool call was not approved.",
}, {
	file:  "vercel-ai_openai-mcp-tool-approval.3.chunks.jsonl",
	resp:  "resp_04a97b4fce127879006949a864795c8195a77efd798149326b",
	items: []string{"mcp_list_tools mcpl_04a97b4fce127879006949a8648d5c8195b329dc93c3bad534", "mcp_approval_request mcpr_04a97b4fce127879006949a8672ac081959f95aa8ceedb7cd9"},
	label: "zip1",
	tools: []string{"create_short_url", "get_url_stats", "validate_url", "generate_short_code"},
	approvals: []wantCall{{ID: "mcpr_04a97b4fce127879006949a8672ac081959f95aa8ceedb7cd9", Name: "create_short_url",
		Args: `{"alias":"","description":"Shortened link for ai-sdk.dev","max_clicks":100,"password":"","url":"https://ai-sdk.dev/"}`}},
}, {
	file: "vercel-ai_openai-mcp-tool-approval.4.chunks.jsonl",
	resp: "resp_04a97b4fce127879006949a87ab0cc8195b3175edc260d6a88",
	items: []string{"mcp_list_tools mcpl_04a97b4fce127879006949a87ac9388195b0d86b0d1f24176b", "mcp_call mcp_04a97b4fce127879006949a87c14248195ac23dfe0854c03d3",
		"message msg_04a97b4fce127879006949a87d97e081959020140d5b07b7b5"},
	label: "zip1",
	tools: []string{"create_short_url", "get_url_stats", "validate_url", "generate_short_code"},
	// The call answers the approval request of turn 3.
	calls: []wantCall{{ID: "mcp_04a97b4fce127879006949a87c14248195ac23dfe0854c03d3", Name: "create_short_url",
		Args:         `{"alias":"","description":"Shortened link for ai-sdk.dev","max_clicks":100,"password":"","url":"https://ai-sdk.dev/"}`,
		ApprovalID:   "mcpr_04a97b4fce127879006949a8672ac081959f95aa8ceedb7cd9",
		OutputPrefix: "✅ Short URL created: https://zip1.io/UDKvlw\n"}},
	text: "Done — here’s your shortened link:\n\nhttps://zip1.io/UDKvlw",
}, {
	file: "vercel-ai_openai-mcp-tool.1.chunks.jsonl",
	resp: "resp_0c72b1033351981300690ccf79c6d88193b7d054f4f83ad50a",
	items: []string{"mcp_list_tools mcpl_0c72b1033351981300690ccf79e488819386bcc68bc55afd27",
		"mcp_call mcp_0c72b1033351981300690ccf7fa1f0819392a313d0805746c8", "mcp_call mcp_0c72b1033351981300690ccf8bdcd8819383bd64316c8519a2",
		"message msg_0c72b1033351981300690ccf97df988193b9c062fa247e6257"},
	label: "dmcp",
	tools: []string{"web_search_exa", "get_code_context_exa"},
	calls: []wantCall{
		{ID: "mcp_0c72b1033351981300690ccf7fa1f0819392a313d0805746c8", Name: "web_search_exa",
			Args:         `{"query":"2025 New York City mayoral election results Nov 2025 latest results", "numResults": 5}`,
			OutputPrefix: `{"requestId": "d9c62fa7c1129e16e2131c3996ea8f6b"`},
		{ID: "mcp_0c72b1033351981300690ccf8bdcd8819383bd64316c8519a2", Name: "web_search_exa",
			Args:         `{"query":"NYC Board of Elections 2025 mayoral results Zohran Mamdani NYC Board of Elections results 2025 mayor", "numResults":5}`,
			OutputPrefix: `{"requestId": "7ff4bca9a3c9eadc6acd476d6aa02547"`},
	},
	text: "Yes — I searched the web. Major outlets are projecting Zohran Mamdani",
}, {
	file: "dotnet-extensions_mcp-never-approval_streaming.sse",
	resp: "resp_68be44fd7298819e82fd82c8516e970d03a2537be0e84a54",
	items: []string{"mcp_list_tools mcpl_68be44fd8f68819eba7a74a2f6d27a5a03a2537be0e84a54",
		"mcp_call mcp_68be4503d45c819e89cb574361c8eba003a2537be0e84a54", "mcp_call mcp_68be4505f134819e806c002f27cce0c303a2537be0e84a54",
		"message msg_68be450c39e8819eb9bf6fcb9fd16ecb03a2537be0e84a54"},
	label: "deepwiki",
	tools: []string{"read_wiki_structure", "read_wiki_contents", "ask_question"},
	calls: []wantCall{
		{ID: "mcp_68be4503d45c819e89cb574361c8eba003a2537be0e84a54", Name: "read_wiki_structure",
			Args: `{"repoName":"dotnet/extensions"}`, OutputPrefix: "Available pages for dotnet/extensions:\n\n- 1 Overview"},
		{ID: "mcp_68be4505f134819e806c002f27cce0c303a2537be0e84a54", Name: "ask_question",
			Args:         `{"repoName":"dotnet/extensions","question":"What is the path to the README.md file for Microsoft.Extensions.AI.Abstractions?"}`,
			OutputPrefix: "The path to the `README.md` file for `Microsoft.Extensions.AI.Abstractions` is"},
	},
	text: "The path to the `README.md` file for `Microsoft.Extensions.AI.Abstractions` in the `dotnet/extensions` repository is:",
}}

func TestEveryRecordedStreamIsCovered(t *testing.T) {
	var files []string
	for _, pat := range []string{"*.sse", "*.chunks.jsonl"} {
		m, err := filepath.Glob(filepath.Join(fixtureDir, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no recorded streams in %s", fixtureDir)
	}
	for _, f := range files {
		if !slices.ContainsFunc(recordedStreams, func(w wantStream) bool { return w.file == filepath.Base(f) }) {
			t.Errorf("recorded stream %s has no case in recordedStreams", filepath.Base(f))
		}
	}
}

func TestRecordedStreams(t *testing.T) {
	for _, w := range recordedStreams {
		t.Run(w.file, func(t *testing.T) {
			t.Parallel()
			api := serveSSE(t, fixtureSSE(t, w.file))
			c := responses.New(responses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: "gpt-5-mini"})
			s := stream(t, c, conversation.UpstreamRequest{UserText: "hello",
				Tools: []policy.ServerTools{{Server: srv(w.label), OfferUnknown: true}}})

			s.mustComplete(t)
			if s.ResponseID() != w.resp || s.Events[0].Kind != conversation.EventCreated {
				t.Errorf("first event %+v, want created %s", s.Events[0], w.resp)
			}
			var items []string
			for _, it := range s.Items() {
				items = append(items, it.Type+" "+it.ID)
				if it.Type != "message" && (it.ServerLabel != w.label || it.UpstreamLabel != w.label) {
					t.Errorf("%s %s: labels %q/%q, want %q", it.Type, it.ID, it.ServerLabel, it.UpstreamLabel, w.label)
				}
			}
			if !slices.Equal(items, w.items) {
				t.Errorf("items\n %q\nwant\n %q", items, w.items)
			}

			lists := s.Items("mcp_list_tools")
			if len(lists) != 1 {
				t.Fatalf("%d mcp_list_tools items", len(lists))
			}
			var names []string
			for _, tool := range lists[0].Tools {
				names = append(names, tool.Name)
				// OpenAI reports annotations as {"read_only": false}.
				if ro := tool.Annotations.ReadOnlyHint; ro == nil || *ro {
					t.Errorf("tool %s: ReadOnlyHint %v, want false from read_only", tool.Name, ro)
				}
				if tool.Description == "" || !json.Valid(tool.InputSchema) || !bytes.HasPrefix(tool.InputSchema, []byte("{")) {
					t.Errorf("tool %s: description %q, schema %s", tool.Name, tool.Description, tool.InputSchema)
				}
			}
			if !slices.Equal(names, w.tools) || lists[0].ListError != nil {
				t.Errorf("tools %q (error %s), want %q", names, lists[0].ListError, w.tools)
			}

			checkCalls(t, "approval", s.Items("mcp_approval_request"), w.approvals)
			checkCalls(t, "call", s.Items("mcp_call"), w.calls)

			if w.text == "" {
				if s.Text() != "" || s.Deltas() != "" {
					t.Errorf("text %q, deltas %q: want none", s.Text(), s.Deltas())
				}
				return
			}
			if !strings.HasPrefix(s.Text(), w.text) {
				t.Errorf("text %q, want it to start with %q", s.Text(), w.text)
			}
			if s.Deltas() != s.Text() {
				t.Errorf("text deltas %q differ from the message %q", s.Deltas(), s.Text())
			}
			msg := s.Items("message")[0]
			for _, ev := range s.Events {
				if ev.Kind == conversation.EventTextDelta && ev.ItemID != msg.ID {
					t.Fatalf("delta for item %q, want %q", ev.ItemID, msg.ID)
				}
			}
		})
	}
}

func checkCalls(t *testing.T, what string, got []*conversation.UpstreamItem, want []wantCall) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d %s items, want %d", len(got), what, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.ID || g.Name != w.Name || g.Arguments != w.Args || g.ApprovalID != w.ApprovalID {
			t.Errorf("%s %d: id %q name %q args %q approval %q\nwant id %q name %q args %q approval %q",
				what, i, g.ID, g.Name, g.Arguments, g.ApprovalID, w.ID, w.Name, w.Args, w.ApprovalID)
		}
		if g.CallError != nil {
			t.Errorf("%s %s: CallError %s, want none", what, g.ID, g.CallError)
		}
		switch {
		case w.OutputPrefix == "" && g.Output != nil:
			t.Errorf("%s %s: Output %q, want nil", what, g.ID, *g.Output)
		case w.OutputPrefix != "" && (g.Output == nil || !strings.HasPrefix(*g.Output, w.OutputPrefix)):
			t.Errorf("%s %s: Output %v, want it to start with %q", what, g.ID, g.Output, w.OutputPrefix)
		}
	}
}
