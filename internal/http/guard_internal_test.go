package http

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
)

// TestDecode_ChecksMediaTypeAndTextItself proves decode refuses a non-JSON
// body and NUL on its own, for a body that did not pass the guard.
func TestDecode_ChecksMediaTypeAndTextItself(t *testing.T) {
	s := &Server{maxBodyBytes: 1 << 10}
	for _, tc := range []struct {
		name, contentType, body, code, field string
	}{
		{"text/plain", "text/plain", `{"a": "b"}`, "unsupported_media_type", ""},
		{"form", "application/x-www-form-urlencoded", `a=b`, "unsupported_media_type", ""},
		{"NUL", "application/json", `{"a": "\u0000"}`, "invalid_text", "a"},
		{"invalid UTF-8", "application/json", "{\"a\": \"\xff\"}", "invalid_text", "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/x", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", tc.contentType)
			c := echo.New().NewContext(req, httptest.NewRecorder())
			var v map[string]string
			err := s.decode(c, &v)
			e, ok := apperr.As(err)
			if !ok || e.Code != tc.code || (tc.field != "" && e.Fields[tc.field] == "") {
				t.Fatalf("decode = %v, want %s on %q", err, tc.code, tc.field)
			}
		})
	}
}

func TestCheckJSONText_NamesTheField(t *testing.T) {
	for _, tc := range []struct{ body, field string }{
		{`{"input": "a\u0000"}`, "input"},
		{`{"a": {"b": [1, "x", "\u0000"]}}`, "a.b[2]"},
		{`{"a": 1, "b": "ok", "c": "\u0000"}`, "c"},
		{`{"a": {"k\u0000": 1}}`, "a"},
		{`[{"x": "y"}, {"z": "\u0000"}]`, "[1].z"},
		{"{\"a\": \"ok\", \"b\": \"\xe2\x28\xa1\"}", "b"},
		{`{"a": {}, "b": [], "c": "\u0000"}`, "c"},
	} {
		err := checkJSONText([]byte(tc.body))
		e, ok := apperr.As(err)
		if !ok || e.Code != "invalid_text" || e.Fields[tc.field] == "" {
			t.Errorf("%s: err = %v, want invalid_text on %q", tc.body, err, tc.field)
		}
	}
	for _, ok := range []string{`{"a": "\\u0000"}`, `{"a": "☀ 天気"}`, `{"a": [1, 2.5, true, null]}`, `{"a": "x"`} {
		if err := checkJSONText([]byte(ok)); err != nil {
			t.Errorf("%s: err = %v, want none (malformed JSON is decode's to report)", ok, err)
		}
	}
}
