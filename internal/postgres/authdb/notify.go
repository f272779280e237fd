package authdb

import (
	"encoding/hex"
	"strings"

	"github.com/toolgate/toolgate/internal/auth"
)

// Channel is where the database notifies every change to a session, a
// personal API token or a user (migration 00049), for the replicas'
// credential caches.
const Channel = "toolgate_auth"

// Invalidate drops from c what one notification on Channel names: a session
// ("s <hex of its hash>"), a token ("t <hex of its hash>"), a user's
// sessions and tokens ("u <id>"), or everything ("*", and anything it
// cannot read: dropping too much costs a read).
func Invalidate(c *auth.CredentialCache, payload []byte) {
	p := string(payload)
	switch {
	case strings.HasPrefix(p, "s "):
		if h, err := hex.DecodeString(p[2:]); err == nil {
			c.DropSession(h)
			return
		}
	case strings.HasPrefix(p, "t "):
		if h, err := hex.DecodeString(p[2:]); err == nil {
			c.DropToken(h)
			return
		}
	case strings.HasPrefix(p, "u ") && len(p) > 2:
		c.DropUser(p[2:])
		return
	}
	c.DropAll()
}
