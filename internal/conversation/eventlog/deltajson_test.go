package eventlog

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
)

// TestEncodeDelta_IsJSONMarshal: a text delta written by hand is byte for
// byte what encoding/json writes, for text with every kind of character
// JSON escapes (quotes, backslashes, controls, HTML, U+2028/9, invalid
// UTF-8) and random bytes; any other payload goes to encoding/json.
func TestEncodeDelta_IsJSONMarshal(t *testing.T) {
	texts := []string{"", "plain", `"quoted" \ back`, "\x00\x01\x1f\b\f\n\r\t", "<script>&amp;</script>", "\u2028\u2029",
		"\xff\xfe invalid \xc3", "héllo wörld ☃ 🌩", "\u007f\u0080\u00a0", "a\u2027b\u202ac"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := rng.IntN(40)
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		texts = append(texts, string(b))
	}
	for _, s := range texts {
		d := conversation.TextDeltaEvent{ItemID: "msg_" + s, ResponseID: s, Delta: s + "!"}
		got, err := encodeDelta(d)
		want, werr := json.Marshal(d)
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Fatalf("encodeDelta(%q) = %s, %v; json.Marshal gives %s, %v", s, got, err, want, werr)
		}
	}
	other := map[string]int{"n": 1}
	if got, err := encodeDelta(other); err != nil || string(got) != `{"n":1}` {
		t.Fatalf("encodeDelta of another payload = %s, %v", got, err)
	}
}
