package policy

import (
	"encoding/base64"
	"strconv"

	"github.com/toolgate/toolgate/internal/apperr"
)

// Cursors are opaque to clients so that the paging scheme can change.
func encodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("a:" + strconv.FormatInt(id, 10)))
}

// DecodeCursor turns a next_cursor value back into an audit entry id.
func DecodeCursor(c string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil && len(b) > 2 && string(b[:2]) == "a:" {
		if id, err := strconv.ParseInt(string(b[2:]), 10, 64); err == nil && id > 0 {
			return id, nil
		}
	}
	return 0, apperr.Invalidf("invalid_cursor", "cursor", "cursor is not one this API returned; use the next_cursor of the previous page")
}
