package callgate

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/toolgate/toolgate/internal/conversation"
)

// newID is a new random id with prefix.
func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// mustRedacted is raw with its secrets redacted.
func mustRedacted(raw string) []byte {
	b, _ := conversation.Redact(raw)
	return b
}
