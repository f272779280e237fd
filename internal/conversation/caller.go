package conversation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
)

// Caller is the signed-in user ctx carries. Without one the request never
// went through authentication: that is a bug, never "anyone".
func Caller(ctx context.Context) (auth.User, error) {
	u, ok := auth.UserFrom(ctx)
	if !ok || u.ID == "" {
		return auth.User{}, apperr.New(apperr.Internal, "no_caller", "the request carries no signed-in user")
	}
	return u, nil
}

// NewID is a new random id with prefix (conv_, grant_, …).
func NewID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// StripNUL removes NUL characters, which Postgres text cannot hold and no
// person means to type.
func StripNUL(s string) string { return strings.ReplaceAll(s, "\x00", "") }
