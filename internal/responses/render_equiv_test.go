package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// hostile are names that need escaping or are otherwise awkward: quotes,
// backslashes, control characters, HTML, unicode, invalid UTF-8, the
// separators JavaScript does not allow in strings, and suffixes the split
// layout generates.
var hostile = []string{
	`say "hi"`, `back\slash`, "new\nline", "tab\tand\rreturn", "\x00nul", "\x1f\x7f", "bell\b\fform",
	"<script>&amp;</script>", "naïve-日本語-🙂", "bad\xffutf8\xc3", "line\u2028sep\u2029", "", " ", "__never", "x__always",
	"a_2", `\u0041`, "é", "e\u0301",
}

// randomCase is a random set of groups and answers of a few servers whose
// labels collide with the labels the renderer generates.
func randomCase(r *rand.Rand) ([]policy.ServerTools, []conversation.Answer) {
	pick := func(pool []string) string { return pool[r.IntN(len(pool))] }
	toolPool := append([]string{"search", "get", "update", "delete", "list", "a", "b"}, hostile...)
	labelPool := []string{"crm", "crm__never", "crm__always", "crm_2", "wiki", "wiki__always_2", "w\"q", "日本"}
	groupOf := func(n int) []policy.GroupedTool {
		var out []policy.GroupedTool
		for range n {
			out = append(out, policy.GroupedTool{Name: pick(toolPool), Source: policy.FromTool})
		}
		if r.IntN(3) > 0 { // mostly sorted, as GroupTools gives them
			slices.SortFunc(out, func(a, b policy.GroupedTool) int { return strings.Compare(a.Name, b.Name) })
		}
		return out
	}
	var groups []policy.ServerTools
	for range r.IntN(5) {
		label := pick(labelPool)
		g := policy.ServerTools{Server: policy.Server{Label: label, URL: "https://" + pick(hostile) + ".example/mcp?a=1&b=<2>", Enabled: true},
			Never: groupOf(r.IntN(4)), Always: groupOf(r.IntN(4)), OfferUnknown: r.IntN(4) == 0, Blocked: []string{"wipe"}}
		if r.IntN(2) == 0 {
			g.Server.Description = pick(hostile)
		}
		if r.IntN(3) == 0 {
			g.Server.Headers = map[string]string{"X-Key": pick(hostile), pick(hostile) + "k": "v\"", "Authorization": "Bearer t"}
		}
		groups = append(groups, g)
	}
	var answers []conversation.Answer
	for range r.IntN(4) {
		a := conversation.Answer{ApprovalRequestID: fmt.Sprintf("mcpr_%d", r.IntN(100)), Approve: r.IntN(2) == 0,
			ServerLabel: pick(labelPool), ToolName: pick(toolPool)}
		switch r.IntN(4) {
		case 0:
			a.UpstreamLabel = a.ServerLabel + "__never"
		case 1:
			a.UpstreamLabel = a.ServerLabel + "__always"
		case 2:
			a.UpstreamLabel = pick(labelPool)
		}
		if r.IntN(3) == 0 {
			a.Reason = pick(hostile)
		}
		answers = append(answers, a)
	}
	return groups, answers
}

// The tools written straight into the request mean what openai-go wrote
// from the ToolUnionParams of the old rendering, on random inputs with
// hostile names, both layouts, answers, and a cache that holds entries of
// earlier (different) requests.
func TestRenderTools_SameAsTheSDKRendering(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 1000))
	cache := newToolCache()
	for i := range 3000 {
		groups, answers := randomCase(r)
		for _, layout := range []Layout{LayoutDefault, LayoutSplit} {
			old, oldLabels := renderToolsSDK(groups, answers, layout)
			want, err := json.Marshal(old)
			if err != nil {
				t.Fatal(err)
			}
			got := RenderTools(groups, answers, layout)
			if old == nil {
				if got.JSON != nil || got.Entries != 0 {
					t.Fatalf("case %d %s: got %s, want no tools", i, layout, got.JSON)
				}
			} else {
				if d := jsonDiff(t, got.JSON, want); d != "" {
					t.Fatalf("case %d %s: tools (-want +got):\n%s\ngroups %+v\nanswers %+v", i, layout, d, groups, answers)
				}
				if !json.Valid(got.JSON) {
					t.Fatalf("case %d: invalid JSON %q", i, got.JSON)
				}
			}
			if got.Entries != len(old) {
				t.Errorf("case %d: Entries = %d, want %d", i, got.Entries, len(old))
			}
			if d := cmp.Diff(oldLabels, got.Labels); d != "" {
				t.Fatalf("case %d: labels (-want +got):\n%s", i, d)
			}
			// Through the cache: the same bytes as rendered afresh.
			for range 2 {
				rc := render(groups, answers, layout, cache)
				var cached []byte
				if len(rc.entries) > 0 {
					cached = rc.appendJSON(nil)
				}
				if !bytes.Equal(cached, got.JSON) {
					t.Fatalf("case %d %s: cached\n%s\nfresh\n%s", i, layout, cached, got.JSON)
				}
			}
		}
	}
}

// appendString writes what encoding/json writes, byte for byte.
func TestAppendString_AsEncodingJSON(t *testing.T) {
	check := func(s string) {
		want, _ := json.Marshal(s)
		if got := appendString([]byte("x"), s); string(got[1:]) != string(want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got[1:], want)
		}
	}
	for _, s := range hostile {
		check(s)
	}
	for c := range 256 {
		check(string(rune(c)))
		check("a" + string([]byte{byte(c)}) + "b")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		check(string(b))
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// oldBody is the request body as openai-go built it before: the params
// with their tools marshalled by openai-go, then "stream" set by
// option.WithJSONSet.
func oldBody(t testing.TB, c *Client, req conversation.UpstreamRequest) []byte {
	t.Helper()
	_ = option.WithJSONSet // what set "stream": sjson, as below
	p := c.params(req)
	p.Tools, _ = renderToolsSDK(req.Tools, req.Answers, c.layout)
	b, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	b, err = sjson.SetBytes(b, "stream", true)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The whole body means what it meant: history, answers, the user's text,
// metadata and previous_response_id beside the tools.
func TestBody_SameAsTheSDKBody(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 2))
	for _, layout := range []Layout{LayoutDefault, LayoutSplit} {
		c := New(Config{BaseURL: "http://127.0.0.1:1/v1/", APIKey: "sk", Model: "gpt-5", Layout: layout, MaxTools: 1000})
		for i := range 500 {
			groups, answers := randomCase(r)
			req := conversation.UpstreamRequest{Tools: groups, Answers: answers, Retry: r.IntN(2) == 0}
			switch r.IntN(3) {
			case 0:
				req.UserText, req.PreviousResponseID = hostile[r.IntN(len(hostile))], "resp_"+hostile[r.IntN(len(hostile))]
			case 1:
				req.History = []conversation.HistoryMessage{{Role: "user", Text: hostile[r.IntN(len(hostile))]}, {Role: "assistant", Text: "ok"}}
			}
			if r.IntN(2) == 0 {
				req.ConversationID, req.TurnID = "conv_"+hostile[r.IntN(len(hostile))], "turn_1"
			}
			got, labels, err := c.body(req)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(got) {
				t.Fatalf("case %d: invalid JSON %s", i, got)
			}
			if d := jsonDiff(t, got, oldBody(t, c, req)); d != "" {
				t.Fatalf("case %d %s: body (-want +got):\n%s", i, layout, d)
			}
			_, oldLabels := renderToolsSDK(groups, answers, layout)
			if d := cmp.Diff(oldLabels, labels); d != "" {
				t.Fatalf("case %d: labels (-want +got):\n%s", i, d)
			}
		}
	}
}

// A cached entry follows every change of what it was rendered from. Lists
// change as new slices (groups are never changed in place: the policy
// snapshot's are shared by every turn); headers are compared by value.
func TestToolCache_FollowsChanges(t *testing.T) {
	c := newToolCache()
	g := []policy.ServerTools{{Server: policy.Server{Label: "crm", URL: "https://crm.example/mcp", Headers: map[string]string{"K": "1"}},
		Never: []policy.GroupedTool{{Name: "get"}, {Name: "search"}}, Always: []policy.GroupedTool{{Name: "delete"}}}}
	check := func(what string) {
		t.Helper()
		rc := render(g, nil, LayoutDefault, c)
		got := rc.appendJSON(nil)
		if want := RenderTools(g, nil, LayoutDefault).JSON; !bytes.Equal(got, want) {
			t.Errorf("after %s: cached\n%s\nwant\n%s", what, got, want)
		}
	}
	check("the first render")
	check("the same again")
	g[0].Never = []policy.GroupedTool{{Name: "get"}, {Name: "search2"}}
	check("a name changed")
	g[0].Never = g[0].Never[:1]
	check("a list shortened in its own memory")
	g[0].Never = g[0].Never[:2]
	check("a list lengthened in its own memory")
	g[0].Always = append(slices.Clone(g[0].Always), policy.GroupedTool{Name: "update"})
	check("a tool added")
	g[0].Never, g[0].Always = g[0].Always, g[0].Never
	check("the groups swapped")
	g[0].Server.Headers["K"] = "2"
	check("a header changed in place")
	g[0].Server.URL = "https://crm2.example/mcp"
	check("the URL changed")
	g[0].Server.Description = "CRM"
	check("the description set")
	g[0].OfferUnknown = true
	check("unknown tools offered")
	g[0].Never = nil
	check("a group emptied")
}

// The same lists in new slices (a new policy snapshot, a group made for one
// person) reuse the entry without rendering it again, and the entry takes
// them as its own.
func TestToolCache_SameNamesInNewSlicesAreNotRenderedAgain(t *testing.T) {
	c := newToolCache()
	groups := scaleGroups(3, 10)
	first := render(groups, nil, LayoutDefault, c)
	again := render(regroup(groups, 3), nil, LayoutDefault, c)
	for i := range first.frags {
		if &first.frags[i][0] != &again.frags[i][0] {
			t.Errorf("entry %d was rendered again", i)
		}
	}
	regrouped := regroup(groups, 1)
	render(regrouped, nil, LayoutDefault, c)
	if f := c.frags[fragKey{regrouped[0].Server.Label, kindDefault}]; !sameSlice(f.lists[0], regrouped[0].Never) || !sameSlice(f.lists[1], regrouped[0].Always) {
		t.Error("the entry did not take the new lists as its own")
	}
}

// Entries of servers no longer rendered do not stay cached for ever.
func TestToolCache_DropsServersGone(t *testing.T) {
	c := newToolCache()
	for i := range 2000 {
		g := []policy.ServerTools{{Server: policy.Server{Label: fmt.Sprintf("s%d", i), URL: "https://x.example/mcp"}, Never: []policy.GroupedTool{{Name: "get"}}}}
		render(g, nil, LayoutDefault, c)
	}
	if n := len(c.frags); n > 256+2+keepFrags {
		t.Errorf("%d entries cached after 2,000 requests of one server each", n)
	}
}

// jsonDiff compares two JSON texts by value.
func jsonDiff(t testing.TB, got, want []byte) string {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %s", got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %s", want)
	}
	return cmp.Diff(w, g)
}

// Turns render at once with one cache (run with -race): each gets its own
// tools, whether its groups are the shared ones or made for it.
func TestToolCache_ConcurrentRenders(t *testing.T) {
	c := newToolCache()
	shared := scaleGroups(20, 10)
	want := RenderTools(shared, nil, LayoutDefault).JSON
	other := scaleGroups(20, 10)
	for i := range other {
		other[i].Never, other[i].Always = other[i].Always, other[i].Never
	}
	wantOther := RenderTools(other, nil, LayoutDefault).JSON
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				groups, exp := shared, want
				switch (w + i) % 3 {
				case 1:
					groups = regroup(shared, 5)
				case 2:
					groups, exp = regroup(other, 20), wantOther
				}
				rc := render(groups, nil, LayoutDefault, c)
				if got := rc.appendJSON(nil); !bytes.Equal(got, exp) {
					t.Errorf("worker %d, render %d: wrong tools", w, i)
					return
				}
			}
		})
	}
	wg.Wait()
}

// A stream keeps only the labels that do not stand for themselves: at
// 1,000 servers in the default layout, none.
func TestStream_KeepsOnlyMappedLabels(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+`{"type":"response.created","response":{"id":"resp_1"}}`+"\n\n")
	}))
	t.Cleanup(srv.Close)
	groups := scaleGroups(1000, 3)
	groups = append(groups, groups[0]) // a label made unique: srv-0000_2
	for _, tc := range []struct {
		layout Layout
		want   int
	}{{LayoutDefault, 1}, {LayoutSplit, 2002}} {
		c := New(Config{BaseURL: srv.URL + "/v1/", APIKey: "sk", Model: "gpt-5", MaxTools: 100000, Layout: tc.layout})
		s, err := c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hi", Tools: groups})
		if err != nil {
			t.Fatal(err)
		}
		l := s.(*eventStream).labels
		if len(l) != tc.want {
			t.Errorf("%s: the stream keeps %d labels, want %d", tc.layout, len(l), tc.want)
		}
		for _, label := range []string{"srv-0000", "srv-0999", "srv-0000_2", "srv-0000__never", "srv-0999__always", "other"} {
			if got, want := l.Server(label), RenderTools(groups, nil, tc.layout).Labels.Server(label); got != want {
				t.Errorf("%s: Server(%q) = %q, want %q", tc.layout, label, got, want)
			}
		}
		_ = s.Close()
	}
}
