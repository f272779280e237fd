// Package gateway is Toolgate's MCP face: every registered MCP server is
// served at /mcp/{server_label}, so that the model's provider calls
// Toolgate, which checks each tools/call where it runs and forwards it to
// the real server with the stored headers.
//
// A provider reaches the face with a capability token (tgc_…) that
// Toolgate puts in the tool entry's headers of one upstream request: it is
// bound to one conversation, turn and server and expires with the turn.
package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/jsonstr"
)

// TokenPrefix begins every capability token.
const TokenPrefix = "tgc_"

// Claims are what a capability token is bound to.
type Claims struct {
	ConversationID string    `json:"c"`
	TurnID         string    `json:"t"`
	ServerLabel    string    `json:"s"`
	ExpiresAt      time.Time `json:"-"`
	Exp            int64     `json:"e"` // ExpiresAt in Unix seconds, as signed

	// Agent: the claims are a person's own MCP client's (a personal API
	// token at /mcp), never a capability token's: ConversationID is the
	// client's session and TurnID the one call's own id. Not signed: the
	// face sets them after checking the person's token.
	Agent bool `json:"-"`
	// Client is what that client said of itself when its session began.
	Client *Client `json:"-"`
}

// Client is an MCP client's clientInfo.
type Client struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
}

// Token errors. Each says what is wrong in words a client's operator can act on.
var (
	ErrNoToken      = errors.New("no capability token: send Authorization: Bearer tgc_… as Toolgate put it in the tool entry's headers")
	ErrMalformed    = errors.New("the capability token is malformed")
	ErrBadSignature = errors.New("the capability token was not issued by this Toolgate (bad signature)")
	ErrExpired      = errors.New("the capability token has expired: it lasts for one turn")
)

// Tokens mints and checks capability tokens with one key (derived from
// SECRETS_KEY, so every replica accepts what another minted).
type Tokens struct {
	key []byte
	now func() time.Time
	// macs keeps HMACs keyed with key, reset between uses: a turn mints a
	// token per server and every call through the face verifies one, and
	// a new HMAC computes its keyed state again each time.
	macs sync.Pool
}

// NewTokens returns Tokens that sign with key (at least 32 bytes).
func NewTokens(key []byte) *Tokens {
	if len(key) < 32 {
		panic("gateway: a capability token key must be at least 32 bytes")
	}
	return &Tokens{key: append([]byte(nil), key...), now: time.Now}
}

// SetClock replaces the clock (tests).
func (t *Tokens) SetClock(now func() time.Time) { t.now = now }

// Mint returns a token for c, valid until c.ExpiresAt.
func (t *Tokens) Mint(c Claims) string {
	c.Exp = c.ExpiresAt.Unix()
	p := base64.RawURLEncoding.EncodeToString(c.payload())
	return TokenPrefix + p + "." + base64.RawURLEncoding.EncodeToString(t.sign(p))
}

// payload is the claims signed, as json.Marshal writes them (the fields
// in order, the strings escaped alike: TestClaims_PayloadIsJSONMarshals),
// without its reflection.
func (c Claims) payload() []byte {
	b := make([]byte, 0, 32+len(c.ConversationID)+len(c.TurnID)+len(c.ServerLabel))
	b = append(b, `{"c":`...)
	b = jsonstr.Append(b, c.ConversationID)
	b = append(b, `,"t":`...)
	b = jsonstr.Append(b, c.TurnID)
	b = append(b, `,"s":`...)
	b = jsonstr.Append(b, c.ServerLabel)
	b = append(b, `,"e":`...)
	b = strconv.AppendInt(b, c.Exp, 10)
	return append(b, '}')
}

func (t *Tokens) sign(p string) []byte {
	m, ok := t.macs.Get().(hash.Hash)
	if ok {
		m.Reset()
	} else {
		m = hmac.New(sha256.New, t.key)
	}
	m.Write([]byte("toolgate capability token v1\x00"))
	m.Write([]byte(p))
	sum := m.Sum(nil)
	t.macs.Put(m)
	return sum
}

// Verify checks tok's signature and expiry and returns its claims.
func (t *Tokens) Verify(tok string) (Claims, error) {
	if tok == "" {
		return Claims{}, ErrNoToken
	}
	rest, ok := strings.CutPrefix(tok, TokenPrefix)
	if !ok {
		return Claims{}, ErrMalformed
	}
	p, sig, ok := strings.Cut(rest, ".")
	if !ok || p == "" || sig == "" {
		return Claims{}, ErrMalformed
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return Claims{}, ErrMalformed
	}
	if !hmac.Equal(got, t.sign(p)) {
		return Claims{}, ErrBadSignature
	}
	raw, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return Claims{}, ErrMalformed
	}
	var c Claims
	if err := json.Unmarshal(raw, &c); err != nil || c.ConversationID == "" || c.TurnID == "" || c.ServerLabel == "" || c.Exp == 0 {
		return Claims{}, ErrMalformed
	}
	c.ExpiresAt = time.Unix(c.Exp, 0)
	if !t.now().Before(c.ExpiresAt) {
		return Claims{}, ErrExpired
	}
	return c, nil
}

// BearerToken returns the token of an Authorization header value
// ("Bearer tgc_…"), or "".
func BearerToken(authorization string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}
