package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/apperr"
)

func TestMaskURL_MasksEveryQueryValueAndKeepsNames(t *testing.T) {
	for in, want := range map[string]string{
		"https://mcp.example/mcp":                                      "https://mcp.example/mcp",
		"https://mcp.example/mcp?api_key=sk-live-abcdefghijkl1234":     "https://mcp.example/mcp?api_key=********1234",
		"https://mcp.example/mcp?token=short&region=eu&flag":           "https://mcp.example/mcp?token=********&region=********&flag",
		"https://mcp.example/mcp?key=a%20b%20c%20d%20e%20f%20g%20h%21": "https://mcp.example/mcp?key=********g+h%21",
		"http://127.0.0.1:8090/mcp?x=":                                 "http://127.0.0.1:8090/mcp?x=********",
	} {
		if got := MaskURL(in); got != want {
			t.Errorf("MaskURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestServerPatch_URLToAnotherHostDropsStoredHeaders(t *testing.T) {
	srv := Server{Label: "s", URL: "https://a.example/mcp", Headers: map[string]string{
		"Authorization": "Bearer 0123456789abcdef", "X-Team": "blue", "X-Old": "gone",
	}}
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name        string
		patch       ServerPatch
		wantHeaders map[string]string
		wantDropped []string
	}{
		{"same origin keeps everything", ServerPatch{URL: str("https://A.example:443/other")},
			srv.Headers, nil},
		{"another host drops everything", ServerPatch{URL: str("https://b.example/mcp")},
			map[string]string{}, []string{"Authorization", "X-Old", "X-Team"}},
		{"another port drops", ServerPatch{URL: str("https://a.example:8443/mcp")},
			map[string]string{}, []string{"Authorization", "X-Old", "X-Team"}},
		{"another scheme drops", ServerPatch{URL: str("http://a.example/mcp")},
			map[string]string{}, []string{"Authorization", "X-Old", "X-Team"}},
		{"headers sent again are kept, removed ones are not reported", ServerPatch{URL: str("https://b.example/mcp"),
			Headers: map[string]*string{"authorization": str("Bearer new-secret"), "X-Old": nil}},
			map[string]string{"authorization": "Bearer new-secret"}, []string{"X-Team"}},
		{"a masked value does not carry the secret along", ServerPatch{URL: str("https://b.example/mcp"),
			Headers: map[string]*string{"Authorization": str(MaskSecret("Bearer 0123456789abcdef")), "X-Team": str("blue")}},
			map[string]string{"X-Team": "blue"}, []string{"Authorization", "X-Old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.patch.Apply(srv)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantHeaders, got.Headers); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDropped, got.HeadersDropped); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServerPatch_MaskedURLBackKeepsTheStoredOne(t *testing.T) {
	real := "https://a.example/mcp?api_key=sk-live-abcdefghijkl1234"
	srv := Server{Label: "s", URL: real, Headers: map[string]string{"Authorization": "Bearer x"}}
	masked := MaskURL(real)
	got, err := ServerPatch{URL: &masked}.Apply(srv)
	if err != nil || got.URL != real || len(got.Headers) != 1 {
		t.Fatalf("masked URL back: url %q headers %v err %v, want the stored URL kept", got.URL, got.Headers, err)
	}

	edited := "https://a.example/mcp2?api_key=" + MaskSecret("sk-live-abcdefghijkl1234")
	_, err = ServerPatch{URL: &edited}.Apply(srv)
	if e, ok := apperr.As(err); !ok || e.Code != "invalid_url" || e.Fields["url"] == "" {
		t.Fatalf("another URL with a masked value: %v, want invalid_url", err)
	}
	if err := (NewServer{Label: "n", URL: masked}).Validate(); apperr.KindOf(err) != apperr.Invalid {
		t.Errorf("creating with a masked URL: %v, want invalid", err)
	}
}
