package responses

import (
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/gateway"
)

// Face is Toolgate's MCP face as the provider reaches it (MCP_ROUTE=gateway).
// With a Face every mcp entry names the face of its server,
// BaseURL/mcp/{server_label}, with a capability token in its headers
// (Authorization: Bearer tgc_…) minted for the request's conversation, turn
// and server; the server's real URL and stored headers are never sent.
type Face struct {
	BaseURL string          // PUBLIC_URL as the provider reaches it, e.g. https://toolgate.example.com
	Tokens  *gateway.Tokens // mints the capability tokens
	TTL     time.Duration   // how long a token lasts from the request (MCP_TOKEN_TTL); 0 is DefaultTokenTTL
}

// DefaultTokenTTL is a token's life when Face.TTL is 0.
const DefaultTokenTTL = 15 * time.Minute

// errNoTurn refuses a request in gateway mode that names no turn: its
// tokens would bind to nothing and the face would refuse every call.
var errNoTurn = errors.New("responses: a request through the MCP face needs its conversation and turn (the capability tokens are bound to them)")

// faceRequest is the face of one request: the tokens it carries, all
// expiring at the same time, so that the same request builds the same bytes
// again (the transport may send it twice).
type faceRequest struct {
	face               *Face
	conversation, turn string
	expires            time.Time
	heads              map[string][]byte // by server label
}

func (f *Face) request(conversationID, turnID string, now time.Time) (*faceRequest, error) {
	if conversationID == "" || turnID == "" {
		return nil, errNoTurn
	}
	ttl := f.TTL
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	return &faceRequest{face: f, conversation: conversationID, turn: turnID, expires: now.Add(ttl)}, nil
}

// URL is the face of the server labelled label.
func (f *Face) URL(label string) string {
	return strings.TrimRight(f.BaseURL, "/") + "/mcp/" + url.PathEscape(label)
}

// head is what an entry of the server labelled server carries in place of
// the server's URL and headers, ending in a comma: the fragment that
// follows is the same for every request (and cached), the head is not.
func (r *faceRequest) head(server string) []byte {
	if h, ok := r.heads[server]; ok {
		return h
	}
	tok := r.face.Tokens.Mint(gateway.Claims{ConversationID: r.conversation, TurnID: r.turn, ServerLabel: server, ExpiresAt: r.expires})
	u := r.face.URL(server)
	b := make([]byte, 0, len(u)+len(tok)+64)
	b = append(b, `"server_url":`...)
	b = appendString(b, u)
	b = append(b, `,"headers":{"Authorization":`...)
	b = appendString(b, "Bearer "+tok)
	b = append(b, `},`...)
	if r.heads == nil {
		r.heads = map[string][]byte{}
	}
	r.heads[server] = b
	return b
}
