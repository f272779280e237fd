package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTokensBindTheirClaimsAndExpire(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	tk := NewTokens(key)
	now := time.Unix(1_800_000_000, 0)
	tk.SetClock(func() time.Time { return now })
	c := Claims{ConversationID: "c1", TurnID: "t1", ServerLabel: "files", ExpiresAt: now.Add(time.Minute)}
	tok := tk.Mint(c)
	if !strings.HasPrefix(tok, "tgc_") {
		t.Fatalf("token %q lacks the tgc_ prefix", tok)
	}
	got, err := tk.Verify(tok)
	if err != nil || got.ConversationID != "c1" || got.TurnID != "t1" || got.ServerLabel != "files" || !got.ExpiresAt.Equal(c.ExpiresAt) {
		t.Fatalf("Verify = %+v, %v", got, err)
	}
	// Another key's token, a changed payload, garbage, none, expired.
	other := NewTokens([]byte(strings.Repeat("o", 32)))
	other.SetClock(func() time.Time { return now })
	if _, err := other.Verify(tok); !errors.Is(err, ErrBadSignature) {
		t.Errorf("another key: %v, want ErrBadSignature", err)
	}
	forged := tk.Mint(Claims{ConversationID: "c2", TurnID: "t1", ServerLabel: "files", ExpiresAt: now.Add(time.Minute)})
	p1, _, _ := strings.Cut(strings.TrimPrefix(forged, "tgc_"), ".")
	_, s0, _ := strings.Cut(strings.TrimPrefix(tok, "tgc_"), ".")
	if _, err := tk.Verify("tgc_" + p1 + "." + s0); !errors.Is(err, ErrBadSignature) {
		t.Errorf("payload swapped under another signature: %v, want ErrBadSignature", err)
	}
	for _, bad := range []string{"tgc_", "tgc_abc", "bearer", "tgc_." + s0} {
		if _, err := tk.Verify(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("Verify(%q) = %v, want ErrMalformed", bad, err)
		}
	}
	if _, err := tk.Verify(""); !errors.Is(err, ErrNoToken) {
		t.Errorf("no token: %v", err)
	}
	now = now.Add(time.Minute)
	if _, err := tk.Verify(tok); !errors.Is(err, ErrExpired) {
		t.Errorf("at expiry: %v, want ErrExpired", err)
	}
}

func TestArgumentsDigestIgnoresLayoutNotValues(t *testing.T) {
	_, a, err := ArgumentsDigest([]byte(`{"b": 1, "a": "x<y"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, b, _ := ArgumentsDigest([]byte(`{"a":"x<y","b":1}`))
	_, c, _ := ArgumentsDigest([]byte(`{"a":"x<z","b":1}`))
	_, d, _ := ArgumentsDigest([]byte(`{"a":"x<y","b":1.0}`))
	if a != b {
		t.Errorf("layout changed the digest")
	}
	if a == c || a == d {
		t.Errorf("a one-byte change kept the digest")
	}
	_, e, _ := ArgumentsDigest(nil)
	_, f, _ := ArgumentsDigest([]byte(`{}`))
	if e != f {
		t.Errorf("empty arguments are not {}")
	}
	for _, bad := range []string{`[1]`, `{"a":1} {}`, `{`, `"s"`} {
		if _, _, err := ArgumentsDigest([]byte(bad)); err == nil {
			t.Errorf("ArgumentsDigest(%s) accepted", bad)
		}
	}
}

// TestClaims_PayloadIsJSONMarshals: the signed payload is written without
// reflection, byte for byte as json.Marshal writes the claims, escapes
// and all; and a token minted, verified and minted again with the pooled
// HMACs keeps its signature.
func TestClaims_PayloadIsJSONMarshals(t *testing.T) {
	for _, c := range []Claims{
		{ConversationID: "conv_1", TurnID: "turn_1", ServerLabel: "demo", Exp: 1_800_000_000},
		{ConversationID: `a"b\c`, TurnID: "<t>&\u2028", ServerLabel: "é\x00\xff", Exp: -5},
		{},
	} {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.payload(); string(got) != string(want) {
			t.Errorf("payload %s, json.Marshal %s", got, want)
		}
	}
	tk := NewTokens([]byte(strings.Repeat("k", 32)))
	c := Claims{ConversationID: "c", TurnID: "t", ServerLabel: "s", ExpiresAt: time.Now().Add(time.Hour)}
	first := tk.Mint(c)
	for range 3 {
		if _, err := tk.Verify(first); err != nil {
			t.Fatal(err)
		}
		if again := tk.Mint(c); again != first {
			t.Fatalf("minted %q, then %q: a reused HMAC kept state", first, again)
		}
	}
}
