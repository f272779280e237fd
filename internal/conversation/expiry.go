package conversation

import (
	"fmt"
	"strings"
	"time"
)

// ExpiredTTLReason is the reason an approval request that waited too long
// is closed with; the next request upstream denies it with this reason.
func ExpiredTTLReason(ttl time.Duration) string {
	return fmt.Sprintf("Nobody decided on this request within APPROVAL_TTL (%s), so it expired and was not approved; ask again if it is still needed.",
		shortDuration(ttl))
}

// ExpiredServerTTLReason is the reason a request of a server with its own
// time limit (approval_ttl_seconds) is closed with when it waited too long.
func ExpiredServerTTLReason(server string, ttl time.Duration) string {
	return fmt.Sprintf("Nobody decided on this request within the time limit of the %s server (%s), so it expired and was not approved; ask again if it is still needed.",
		server, shortDuration(ttl))
}

// shortDuration writes d without the zero units time.Duration.String adds
// ("30m", not "30m0s").
func shortDuration(d time.Duration) string {
	out := d.String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
}
