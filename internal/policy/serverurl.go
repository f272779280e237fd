package policy

import (
	"context"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/netguard"
)

// MaskURL hides the values in a URL's query string, which often carry
// secrets (?api_key=..., ?token=...), the way MaskSecret hides header values:
// every value is masked, names stay. The API, the audit log and the logs
// show a server's URL only in this form; discovery and the model provider
// get the real one. A URL without a query, or one that does not parse, is
// returned as it is (a URL that does not parse is never stored).
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return raw
	}
	parts := strings.Split(u.RawQuery, "&")
	for i, p := range parts {
		name, value, ok := strings.Cut(p, "=")
		if !ok {
			continue // a bare name has no value to hide
		}
		v, err := url.QueryUnescape(value)
		if err != nil {
			v = value
		}
		parts[i] = name + "=" + maskPrefix + url.QueryEscape(strings.TrimPrefix(MaskSecret(v), maskPrefix))
	}
	u.RawQuery = strings.Join(parts, "&")
	return u.String()
}

// hasMaskedQueryValue reports whether a URL carries a masked query value,
// which is only accepted back as the whole masked URL of the server.
func hasMaskedQueryValue(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	for _, p := range strings.Split(u.RawQuery, "&") {
		_, value, _ := strings.Cut(p, "=")
		if v, err := url.QueryUnescape(value); err == nil && strings.HasPrefix(v, maskPrefix) || strings.HasPrefix(value, maskPrefix) {
			return true
		}
	}
	return false
}

// URLChecker is the URL policy for what Toolgate fetches itself (see
// package netguard): CheckURL says why a server URL may not be reached.
type URLChecker interface {
	CheckURL(ctx context.Context, raw string) error
}

// CheckURL refuses a server URL urls refuses (nil: every URL is accepted).
func CheckURL(ctx context.Context, urls URLChecker, raw string) error {
	if urls == nil {
		return nil
	}
	if err := urls.CheckURL(ctx, raw); err != nil {
		return apperr.Invalidf("url_not_allowed", "url", "the server's url is not allowed: %s", err.Error())
	}
	return nil
}

// applyURL sets the patch's URL on s. The masked form the API showed keeps
// the stored URL. A URL on another origin (scheme, host, port) empties the
// stored headers, which are credentials for the old host: only what the
// same patch sends again is kept (see droppedHeaders). moved reports that.
func (p ServerPatch) applyURL(f apperr.Fields, s Server) (_ Server, moved bool) {
	if *p.URL == s.URL || *p.URL == MaskURL(s.URL) {
		return s, false
	}
	validateURL(f, *p.URL)
	moved = !sameOrigin(s.URL, *p.URL)
	s.URL = *p.URL
	if moved {
		s.Headers = map[string]string{}
	}
	return s, moved
}

// droppedHeaders lists the stored headers a move to another origin dropped:
// those the patch neither sent again nor removed on purpose (null).
func droppedHeaders(stored, kept map[string]string, patch map[string]*string) []string {
	var out []string
	for _, name := range sortedKeys(stored) {
		if _, ok := lookupHeader(kept, name); ok {
			continue
		}
		if k, ok := lookupPatch(patch, name); ok && patch[k] == nil {
			continue
		}
		out = append(out, name)
	}
	return out
}

func lookupPatch(p map[string]*string, name string) (string, bool) {
	for k := range p {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return name, false
}

func sameOrigin(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	return errA == nil && errB == nil && netguard.Origin(ua) == netguard.Origin(ub)
}
