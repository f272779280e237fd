package eventlog

import (
	"encoding/json"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/jsonstr"
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
	b = jsonstr.Append(b, d.ItemID)
	b = append(b, `,"response_id":`...)
	b = jsonstr.Append(b, d.ResponseID)
	b = append(b, `,"delta":`...)
	b = jsonstr.Append(b, d.Delta)
	return append(b, '}'), nil
}
