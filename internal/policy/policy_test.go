package policy

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/apperr"
)

func TestDigest_DependsOnContentNotLayout(t *testing.T) {
	a := DiscoveredTool{Name: "x", Description: "d", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)}
	b := a
	b.InputSchema = json.RawMessage(`{ "properties": { "a": {"type": "string"} }, "type": "object" }`)
	if a.Digest() != b.Digest() {
		t.Error("key order or whitespace changed the digest")
	}
	changed := []func(*DiscoveredTool){
		func(t *DiscoveredTool) { t.Description = "now deletes everything" },
		func(t *DiscoveredTool) { t.InputSchema = json.RawMessage(`{"type":"object"}`) },
		func(t *DiscoveredTool) { t.Annotations.ReadOnlyHint = new(bool) },
		func(t *DiscoveredTool) { t.Title = "X" },
	}
	for i, change := range changed {
		c := a
		change(&c)
		if c.Digest() == a.Digest() {
			t.Errorf("change %d kept the digest", i)
		}
	}
}

func TestServerPatch_HeaderMerge(t *testing.T) {
	srv := Server{Label: "s", URL: "http://x.example/mcp", Headers: map[string]string{
		"Authorization": "Bearer 0123456789abcdef", "X-Team": "blue",
	}}
	masked := MaskSecret(srv.Headers["Authorization"])
	str := func(s string) *string { return &s }
	got, err := ServerPatch{Headers: map[string]*string{
		"authorization": str(masked), // sent back as read: keep the secret
		"X-Team":        nil,         // removed
		"X-New":         str("v"),    // added
	}}.Apply(srv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"authorization": "Bearer 0123456789abcdef", "X-New": "v"}
	if diff := cmp.Diff(want, got.Headers); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"Authorization": "Bearer 0123456789abcdef", "X-Team": "blue"}, srv.Headers); diff != "" {
		t.Errorf("Apply changed the original server's headers:\n%s", diff)
	}
}

func TestMaskSecret_NeverShowsShortSecrets(t *testing.T) {
	for in, want := range map[string]string{
		"short":                   "********",
		"fifteen-chars-x":         "********",
		"sixteen-chars-xy":        "********s-xy",
		"Bearer sk-live-abcd1234": "********1234",
	} {
		if got := MaskSecret(in); got != want {
			t.Errorf("MaskSecret(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewServer_ValidateReportsAllFields(t *testing.T) {
	bad := Policy("sometimes")
	err := NewServer{Label: "a b", URL: "ftp://x", DefaultPolicy: &bad, Headers: map[string]string{"X": ""}}.Validate()
	e, ok := apperr.As(err)
	if !ok || e.Kind != apperr.Invalid {
		t.Fatalf("err = %v", err)
	}
	if diff := cmp.Diff([]string{"default_policy", "headers.X", "label", "url"}, sortedKeys(e.Fields)); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	if e.Code != "invalid_label" {
		t.Errorf("code = %s", e.Code)
	}
}
