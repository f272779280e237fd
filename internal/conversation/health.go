package conversation

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/policy"
)

// The words of the engine's notices about MCP servers (engine/health.go).

// Notice codes about MCP servers.
const (
	// NoticeServerSkipped: the request left the server out because it is
	// unreachable (discovery failed, or calls in a row) or slow to list its
	// tools (MCP_LIST_TIME_LIMIT).
	NoticeServerSkipped = "server_skipped"
	// NoticeServerDropped: the provider could not list the server's tools
	// (424), so the request was sent again without it.
	NoticeServerDropped = "server_dropped"
)

// SkippedMessage is the notice for a server left out: "demo-2 skipped:
// unreachable since 14:03:12 UTC (connection refused)". The day is named
// when it is not today's.
func SkippedMessage(sk policy.SkippedServer, now time.Time) string {
	since := "a while"
	if h := sk.Health.Since; h != nil {
		at, today := h.UTC(), now.UTC()
		since = at.Format("15:04:05 UTC")
		if at.YearDay() != today.YearDay() || at.Year() != today.Year() {
			since = at.Format("2006-01-02 15:04:05 UTC")
		}
	}
	state := "unreachable"
	if sk.Health.Status == policy.HealthSlow {
		state = "slow to list its tools"
	}
	msg := fmt.Sprintf("%s skipped: %s since %s", sk.Label, state, since)
	if sk.Health.LastError != "" {
		msg += " (" + Clip(sk.Health.LastError) + ")"
	}
	return msg
}

// UnreachableCall reports whether a call's error says the provider could
// not reach the server: an http_error with a gateway status.
func UnreachableCall(raw json.RawMessage) bool {
	var e struct {
		Type string `json:"type"`
		Code int    `json:"code"`
	}
	if !Given(raw) || json.Unmarshal(raw, &e) != nil || e.Type != "http_error" {
		return false
	}
	return e.Code == 502 || e.Code == 503 || e.Code == 504
}

func Given(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null" && s != `""`
}

// ErrorText is a provider's error as words: a string as it is, an object's
// message, else the JSON.
func ErrorText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Message != "" {
		return o.Message
	}
	return string(raw)
}

// Clip bounds a provider's or server's words in a notice.
func Clip(s string) string {
	const limit = 300
	if r := []rune(s); len(r) > limit {
		return string(r[:limit-1]) + "…"
	}
	return s
}

// PrelistNotice tells the person which servers could not be checked.
func PrelistNotice(label string, err error) Notice {
	return Notice{Code: NoticeServerUnchecked, ServerLabel: label, Message: fmt.Sprintf(
		"%s could not be listed before the request (%s), so its tools that would run without asking ask this time",
		label, Clip(err.Error()))}
}
