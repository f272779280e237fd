package engine

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		raw, want string
		paths     []string
	}{
		{`{"city":"Oslo"}`, `{"city":"Oslo"}`, nil},
		{`{"password":"hunter2","user":"ann"}`, `{"password":"[redacted]","user":"ann"}`, []string{"password"}},
		{`{"headers":{"Authorization":"Bearer x","X-Api-Key":"k"},"list":[{"client_secret":"s"}]}`,
			`{"headers":{"Authorization":"[redacted]","X-Api-Key":"[redacted]"},"list":[{"client_secret":"[redacted]"}]}`,
			[]string{"headers.Authorization", "headers.X-Api-Key", "list[0].client_secret"}},
		{`{"accessToken":"t","auth":{"user":"u"},"token":null}`, `{"accessToken":"[redacted]","auth":"[redacted]","token":null}`,
			[]string{"accessToken", "auth"}},
		{``, `{}`, nil},
		{`not json`, `"not json"`, nil},
	}
	for _, tc := range tests {
		got, paths := conversation.Redact(tc.raw)
		if string(got) != tc.want || strings.Join(paths, ",") != strings.Join(tc.paths, ",") {
			t.Errorf("Redact(%s) = %s %v, want %s %v", tc.raw, got, paths, tc.want, tc.paths)
		}
	}
}

func TestTitleFrom(t *testing.T) {
	if got := titleFrom("  What is the weather?\nmore"); got != "What is the weather?" {
		t.Errorf("titleFrom = %q", got)
	}
	if got := titleFrom(strings.Repeat("é", 80)); len([]rune(got)) != 61 {
		t.Errorf("long title %q not cut to 60 characters and an ellipsis", got)
	}
}
