package callgate

import (
	"github.com/toolgate/toolgate/internal/conversation"
)

// mustRedacted is raw with its secrets redacted.
func mustRedacted(raw string) []byte {
	b, _ := conversation.Redact(raw)
	return b
}
