package http

import (
	"bytes"
	"strings"
	"testing"
)

func TestRequestHash(t *testing.T) {
	base := requestHash("/api/responses", []byte(`{"input":"hi","conversation_id":"conv_1"}`))
	for name, c := range map[string]struct {
		route, body string
		same        bool
	}{
		"key order and spacing": {"/api/responses", ` { "conversation_id" : "conv_1", "input": "hi" } `, true},
		"another value":         {"/api/responses", `{"input":"hi!","conversation_id":"conv_1"}`, false},
		"trailing data":         {"/api/responses", `{"input":"hi","conversation_id":"conv_1"} {}`, false},
		"another route":         {"/api/responses/approval-response", `{"input":"hi","conversation_id":"conv_1"}`, false},
	} {
		if got := bytes.Equal(requestHash(c.route, []byte(c.body)), base); got != c.same {
			t.Errorf("%s: same hash %v, want %v", name, got, c.same)
		}
	}
	// Numbers keep their text: 1 and 1.0 are different bodies.
	if bytes.Equal(requestHash("/r", []byte(`{"n":1}`)), requestHash("/r", []byte(`{"n":1.0}`))) {
		t.Error("1 and 1.0 hash the same")
	}
}

func TestValidIdempotencyKey(t *testing.T) {
	for key, want := range map[string]bool{
		"":                       false,
		" ":                      true,
		"~":                      true,
		"a\x1fb":                 false,
		"a\x7fb":                 false,
		"é":                      false,
		strings.Repeat("k", 255): true,
		strings.Repeat("k", 256): false,
	} {
		if got := validIdempotencyKey(key); got != want {
			t.Errorf("validIdempotencyKey(%q) = %v, want %v", key, got, want)
		}
	}
}
