package policy

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/apperr"
)

// Limits on server fields, so one request cannot store unbounded data.
const (
	MaxURLLen         = 2048
	MaxDescriptionLen = 1024
	MaxHeaders        = 32
	MaxHeaderValueLen = 8192
)

// Server is a registered MCP server (an OpenAI connector). Label is its id.
type Server struct {
	Label         string
	URL           string
	Description   string
	Headers       map[string]string // secret values; never sent to clients unmasked
	DefaultPolicy *Policy           // nil: fall back to the global default
	// DefaultPolicyLocked keeps personal policies from loosening the default.
	DefaultPolicyLocked bool
	Enabled             bool
	// ApprovalTTLSeconds is how long the server's approval requests wait
	// for a decision before they expire: nil means APPROVAL_TTL, 0 never.
	ApprovalTTLSeconds *int
	// FirstDiscoveredAt is when discovery first found the server's tools;
	// tools first seen later ask until someone sets their policy.
	FirstDiscoveredAt *time.Time
	CreatedAt         time.Time
	UpdatedAt         time.Time
	RefreshedAt       *time.Time // last tool discovery attempt
	RefreshError      string     // why the last attempt failed, "" if it worked
	ToolCount         int        // discovered tools
	Health            Health     // whether it could be reached when last checked
	// HeadersDropped is not stored: the headers a change of the URL to
	// another host dropped (ServerPatch.Apply), for the answer and the audit.
	HeadersDropped []string
	// ReadOnlyHints says whether an admin accepted the server's
	// readOnlyHint annotations (HintsTrusted) or they are still the
	// server's claim (HintsClaimed, the default): under
	// ask_unless_read_only a claimed hint runs nothing unasked.
	ReadOnlyHints string
	// UnmaskedResults: the server's results pass Toolgate's MCP face
	// untouched (mask_results false). By default (false, so that a Server
	// built anywhere masks) the face masks secret-looking values in every
	// result before the provider reads it.
	UnmaskedResults bool
}

// The states of a server's read-only hints (read_only_hints).
const (
	// HintsClaimed: the server says which tools are read-only, nobody has
	// accepted that yet; its tools ask.
	HintsClaimed = "claimed"
	// HintsTrusted: an admin accepted the server's read-only hints.
	HintsTrusted = "trusted"
)

// NewServer is the input that creates a server.
type NewServer struct {
	Label         string            `json:"label"`
	URL           string            `json:"url"`
	Description   string            `json:"description"`
	Headers       map[string]string `json:"headers"`
	DefaultPolicy *Policy           `json:"default_policy"`
	// DefaultPolicyLocked keeps personal policies from loosening the default.
	DefaultPolicyLocked bool  `json:"default_policy_locked"`
	Enabled             *bool `json:"enabled"`
	// ApprovalTTLSeconds overrides APPROVAL_TTL for the server's approval
	// requests (MinApprovalTTLSeconds..MaxApprovalTTLSeconds, or 0: never
	// expire); nil: APPROVAL_TTL.
	ApprovalTTLSeconds *int `json:"approval_ttl_seconds"`
	// MaskResults: whether the MCP face masks secret-looking values in the
	// server's results before the provider reads them; nil: true.
	MaskResults *bool `json:"mask_results"`
}

// Validate checks every field and reports all problems at once.
func (n NewServer) Validate() error {
	f := apperr.Fields{}
	if err := ValidateLabel(n.Label); err != nil {
		f.Add("label", "%s", fieldMsg(err, "label"))
	}
	validateURL(f, n.URL)
	validateDescription(f, n.Description)
	validateHeaders(f, n.Headers)
	if n.DefaultPolicy != nil && !n.DefaultPolicy.ValidDefault() {
		f.Add("default_policy", "default_policy must be one of ask_unless_read_only, always, never, blocked, or null (got %q)", *n.DefaultPolicy)
	}
	validateApprovalTTL(f, n.ApprovalTTLSeconds)
	return f.Err(firstCode(f), "the server is not valid: "+f.Join())
}

// ServerPatch changes some fields of a server; nil fields stay as they are.
type ServerPatch struct {
	Label       *string `json:"label"` // immutable: only accepted when unchanged
	URL         *string `json:"url"`
	Description *string `json:"description"`
	// Headers are merged: a name with a string sets that header, a name with
	// null removes it, names not mentioned stay. A value equal to the masked
	// form the API showed for that header keeps the stored secret, so a client
	// can send back what it read.
	Headers       map[string]*string `json:"headers"`
	DefaultPolicy Optional[Policy]   `json:"default_policy"`
	// DefaultPolicyLocked keeps personal policies from loosening the default (admin only).
	DefaultPolicyLocked *bool `json:"default_policy_locked"`
	Enabled             *bool `json:"enabled"`
	// ApprovalTTLSeconds: a number of seconds, 0 (never expire) or null
	// (APPROVAL_TTL).
	ApprovalTTLSeconds Optional[int] `json:"approval_ttl_seconds"`
	// ReadOnlyHints: "trusted" accepts the server's readOnlyHint
	// annotations, "claimed" takes that back (admin only, audited).
	ReadOnlyHints *string `json:"read_only_hints"`
	// MaskResults: false lets the server's results pass the MCP face
	// untouched; true masks secret-looking values (admin only, audited).
	MaskResults *bool `json:"mask_results"`
}

// Apply validates p against s and returns the changed server.
func (p ServerPatch) Apply(s Server) (Server, error) {
	f := apperr.Fields{}
	if p.Label != nil && *p.Label != s.Label {
		return s, apperr.Invalidf("label_immutable", "label",
			"a server's label cannot change; delete the server and create it again under the new label")
	}
	stored, moved := s.Headers, false
	if p.URL != nil {
		s, moved = p.applyURL(f, s)
	}
	if p.Description != nil {
		validateDescription(f, *p.Description)
		s.Description = *p.Description
	}
	if p.Headers != nil {
		validatePatchNames(f, p.Headers)
		merged := make(map[string]string, len(s.Headers))
		for k, v := range s.Headers {
			merged[k] = v
		}
		for name, v := range p.Headers {
			old, had := lookupHeader(merged, name)
			delete(merged, old)
			switch {
			case v == nil:
			case moved && strings.HasPrefix(*v, maskPrefix): // a masked value does not carry a secret to another host
			case had && *v == MaskSecret(s.Headers[old]):
				merged[name] = s.Headers[old]
			default:
				merged[name] = *v
			}
		}
		validateHeaders(f, merged)
		s.Headers = merged
	}
	if moved {
		s.HeadersDropped = droppedHeaders(stored, s.Headers, p.Headers)
		// Another origin is another server: what it says of its tools is
		// its claim until an admin accepts it again.
		s.ReadOnlyHints = HintsClaimed
	}
	if p.ReadOnlyHints != nil {
		if v := *p.ReadOnlyHints; v != HintsClaimed && v != HintsTrusted {
			f.Add("read_only_hints", "read_only_hints must be \"trusted\" (accept the server's read-only hints) or \"claimed\" (got %q)", v)
		}
		s.ReadOnlyHints = *p.ReadOnlyHints
	}
	if p.DefaultPolicy.Set {
		if p.DefaultPolicy.Value != nil && !p.DefaultPolicy.Value.ValidDefault() {
			f.Add("default_policy", "default_policy must be one of ask_unless_read_only, always, never, blocked, or null (got %q)", *p.DefaultPolicy.Value)
		}
		s.DefaultPolicy = p.DefaultPolicy.Value
	}
	if p.DefaultPolicyLocked != nil {
		s.DefaultPolicyLocked = *p.DefaultPolicyLocked
	}
	if p.Enabled != nil {
		s.Enabled = *p.Enabled
	}
	if p.MaskResults != nil {
		s.UnmaskedResults = !*p.MaskResults
	}
	if p.ApprovalTTLSeconds.Set {
		validateApprovalTTL(f, p.ApprovalTTLSeconds.Value)
		s.ApprovalTTLSeconds = p.ApprovalTTLSeconds.Value
	}
	if err := f.Err(firstCode(f), "the change is not valid: "+f.Join()); err != nil {
		return s, err
	}
	return s, nil
}

// lookupHeader finds name among h's keys case-insensitively, as HTTP does.
func lookupHeader(h map[string]string, name string) (string, bool) {
	for k := range h {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return name, false
}

// MaskSecret hides a secret value: long values keep their last four
// characters so a person can tell two keys apart, short ones show nothing.
func MaskSecret(v string) string {
	if utf8.RuneCountInString(v) < 16 {
		return maskPrefix
	}
	r := []rune(v)
	return maskPrefix + string(r[len(r)-4:])
}

// maskPrefix starts every masked value; no real secret is expected to.
const maskPrefix = "********"

// validatePatchNames rejects a patch naming one header twice in different
// case, whose outcome would otherwise depend on map order.
func validatePatchNames(f apperr.Fields, h map[string]*string) {
	seen := map[string]string{}
	for _, name := range sortedKeys(h) {
		c := http.CanonicalHeaderKey(name)
		if other, dup := seen[c]; dup {
			f.Add("headers."+name, "headers %q and %q are the same header (names are case-insensitive); send it once", other, name)
		}
		seen[c] = name
	}
}

// MaskedHeaders returns the header names with masked values.
func MaskedHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[k] = MaskSecret(v)
	}
	return out
}

func validateURL(f apperr.Fields, raw string) {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		f.Add("url", "url is required: the MCP server's streamable HTTP endpoint, e.g. https://mcp.example.com/mcp")
	case len(raw) > MaxURLLen:
		f.Add("url", "url must be at most %d characters", MaxURLLen)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "":
		f.Add("url", "url must be an absolute http or https URL, e.g. https://mcp.example.com/mcp (got %q)", raw)
	case u.User != nil:
		f.Add("url", "url must not carry credentials; put them in headers, which are stored as secrets")
	case hasMaskedQueryValue(raw):
		f.Add("url", "url holds a masked query value (%s...); send the real value, or send the server's url back exactly as shown to keep it", maskPrefix)
	}
}

func validateDescription(f apperr.Fields, d string) {
	if utf8.RuneCountInString(d) > MaxDescriptionLen {
		f.Add("description", "description must be at most %d characters", MaxDescriptionLen)
	}
}

func validateHeaders(f apperr.Fields, h map[string]string) {
	if len(h) > MaxHeaders {
		f.Add("headers", "at most %d headers are allowed", MaxHeaders)
		return
	}
	seen := map[string]bool{}
	for name, v := range h {
		key := "headers." + name
		switch {
		case !validHeaderName(name):
			f.Add(key, "header name %q is not a valid HTTP header name", name)
		case seen[http.CanonicalHeaderKey(name)]:
			f.Add(key, "header %q is given twice (names are case-insensitive)", name)
		case v == "":
			f.Add(key, "header %q needs a value", name)
		case strings.HasPrefix(v, maskPrefix):
			f.Add(key, "header %q holds a masked value; send the real secret (a masked value is only accepted back for the header it was shown for)", name)
		case len(v) > MaxHeaderValueLen:
			f.Add(key, "header %q is longer than %d bytes", name, MaxHeaderValueLen)
		case strings.ContainsAny(v, "\r\n\x00"):
			f.Add(key, "header %q must not contain line breaks or NUL", name)
		}
		seen[http.CanonicalHeaderKey(name)] = true
	}
}

func validHeaderName(name string) bool {
	if name == "" || len(name) > 256 {
		return false
	}
	for _, c := range name {
		if c > 127 || !strings.ContainsRune("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", c) {
			return false
		}
	}
	return true
}

// firstCode names the error after the first problem field, in a fixed order.
func firstCode(f apperr.Fields) string {
	for _, k := range []string{"label", "url", "default_policy", "description", "approval_ttl_seconds", "read_only_hints"} {
		if _, ok := f[k]; ok {
			return map[string]string{"label": "invalid_label", "url": "invalid_url",
				"default_policy": "invalid_policy", "description": "invalid_description",
				"approval_ttl_seconds": "invalid_approval_ttl", "read_only_hints": "invalid_read_only_hints"}[k]
		}
	}
	return "invalid_headers"
}

func fieldMsg(err error, field string) string {
	if e, ok := apperr.As(err); ok {
		if m, ok := e.Fields[field]; ok {
			return m
		}
		return e.Message
	}
	return fmt.Sprint(err)
}

// The bounds of a server's approval_ttl_seconds, those of APPROVAL_TTL:
// shorter than a minute leaves no time to read a card, and a week is as long
// as anyone waits on purpose. 0 is allowed too: the server's requests wait
// until someone decides.
const (
	MinApprovalTTLSeconds = 60
	MaxApprovalTTLSeconds = 7 * 24 * 3600
)

// ApprovalTTL is how long the server's approval requests wait before they
// expire, given the workspace's APPROVAL_TTL def; 0 means never.
func (s Server) ApprovalTTL(def time.Duration) time.Duration {
	if s.ApprovalTTLSeconds == nil {
		return def
	}
	return time.Duration(*s.ApprovalTTLSeconds) * time.Second
}

func validateApprovalTTL(f apperr.Fields, v *int) {
	if v != nil && *v != 0 && (*v < MinApprovalTTLSeconds || *v > MaxApprovalTTLSeconds) {
		f.Add("approval_ttl_seconds", "approval_ttl_seconds must be from %d to %d seconds, 0 (requests never expire) or null (APPROVAL_TTL applies) (got %d)",
			MinApprovalTTLSeconds, MaxApprovalTTLSeconds, *v)
	}
}
