package conversation

import (
	"encoding/json"

	"github.com/toolgate/toolgate/internal/redact"
)

// RedactedValue replaces values under secret-looking keys, and the secret
// part of a string that carries a credential (redact.Marker).
const RedactedValue = redact.Marker

// Redact parses tool arguments (JSON text as the model wrote them) and
// hides their secrets at any depth (redact.Arguments): it returns the
// redacted JSON and the paths it hid ("auth.token", "items[2].password").
func Redact(raw string) (json.RawMessage, []string) {
	return redact.Arguments(raw)
}
