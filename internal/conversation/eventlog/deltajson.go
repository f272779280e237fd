package eventlog

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/conversation"
)

// encodeDelta is json.Marshal(data), written by hand for a text delta (the
// event every turn sends most: reflection was 4 % of a 50-stream round's
// CPU). The bytes are encoding/json's: the same field order and the same
// escaping (HTML characters, U+2028 and U+2029 escaped, invalid UTF-8 as
// U+FFFD), which TestEncodeDelta_IsJSONMarshal checks.
func encodeDelta(data any) ([]byte, error) {
	d, ok := data.(conversation.TextDeltaEvent)
	if !ok {
		return json.Marshal(data)
	}
	b := make([]byte, 0, len(`{"item_id":"","response_id":"","delta":""}`)+len(d.ItemID)+len(d.ResponseID)+len(d.Delta)+8)
	b = append(b, `{"item_id":`...)
	b = appendJSONString(b, d.ItemID)
	b = append(b, `,"response_id":`...)
	b = appendJSONString(b, d.ResponseID)
	b = append(b, `,"delta":`...)
	b = appendJSONString(b, d.Delta)
	return append(b, '}'), nil
}

const hex = "0123456789abcdef"

// appendJSONString appends s as encoding/json writes a string (with its
// default HTML escaping).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
