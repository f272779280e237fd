package responses

import "github.com/toolgate/toolgate/internal/jsonstr"

// appendString appends s as a JSON string, as encoding/json writes it.
func appendString(b []byte, s string) []byte { return jsonstr.Append(b, s) }
