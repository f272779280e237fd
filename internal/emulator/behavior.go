package emulator

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// BehaviorHeader selects timing and faults for one request. Its value uses
// the same syntax as Config.Behavior: "key=value; key; key=value".
const BehaviorHeader = "X-Emulator-Behavior"

// Behavior is the timing and fault selection for one request. The zero value
// is a fast, healthy upstream.
type Behavior struct {
	FirstEventDelay time.Duration // before the first byte of the answer
	EventDelay      time.Duration // between two stream events
	Deltas          int           // split the answer text into exactly this many deltas (0: word by word)
	DeltaSize       int           // or into deltas of this many characters

	Status     int    // answer with this HTTP error status instead (429, 5xx, ...)
	RetryAfter string // Retry-After for Status 429 (seconds)
	Quota      bool   // Status 429 is insufficient_quota (the account has no quota or credit left), not a rate limit
	Times      int    // faults apply only to the first Times requests with the same behavior (0: always)

	Stall   time.Duration // pause this long (or until the client leaves) at event At; At 0: before the first byte
	Cut     bool          // close the connection at event At without a terminal event
	ErrorEv string        // send a top-level error event with this code at event At, then end
	Failed  string        // end with response.failed carrying this error code
	Incomp  string        // end with response.incomplete for this reason; the answer text is cut in half
	At      int           // event index at which a stream fault fires (-1: just before the terminal event)

	MCPError string // "list": listing fails (HTTP 424); "list-in-stream": response.mcp_list_tools.failed; "call": every tools/call fails

	spec string // the normalised text, the key of the Times counter
}

// HasFault says whether any fault (not just timing) is selected.
func (b Behavior) HasFault() bool {
	return b.Status != 0 || b.Stall != 0 || b.Cut || b.ErrorEv != "" || b.Failed != "" || b.Incomp != "" || b.MCPError != ""
}

// withoutFaults keeps the timing and drops every fault.
func (b Behavior) withoutFaults() Behavior {
	return Behavior{FirstEventDelay: b.FirstEventDelay, EventDelay: b.EventDelay, Deltas: b.Deltas, DeltaSize: b.DeltaSize, At: -1}
}

// ParseBehavior parses "key=value; key; ..." (separators ';' or ',').
// Unknown keys and bad values are errors, so a typo in a test cannot turn
// a fault test into a test of the happy path.
func ParseBehavior(s string) (Behavior, error) {
	b := Behavior{At: -1}
	var parts []string
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' }) {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		parts = append(parts, p)
		key, val, hasVal := strings.Cut(p, "=")
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
		var err error
		switch key {
		case "first-event-delay", "ttfb":
			b.FirstEventDelay, err = parseDur(val)
		case "event-delay":
			b.EventDelay, err = parseDur(val)
		case "deltas":
			b.Deltas, err = parsePositive(val)
		case "delta-size":
			b.DeltaSize, err = parsePositive(val)
		case "status":
			b.Status, err = strconv.Atoi(val)
			if err == nil && (b.Status < 400 || b.Status > 599) {
				err = fmt.Errorf("want an HTTP error status 400-599")
			}
		case "quota":
			b.Status, b.Quota = 429, true
			err = noValue(hasVal)
		case "retry-after":
			// 0 is a valid Retry-After: clients retry at once, which keeps
			// retry tests fast.
			if n, aerr := strconv.Atoi(val); aerr != nil || n < 0 {
				err = fmt.Errorf("want whole seconds >= 0")
			}
			b.RetryAfter = val
		case "times":
			b.Times, err = parsePositive(val)
		case "stall":
			b.Stall, err = parseDur(val)
		case "at":
			b.At, err = strconv.Atoi(val)
			if err == nil && b.At < 0 {
				err = fmt.Errorf("want an event index >= 0")
			}
		case "cut":
			b.Cut = true
			err = noValue(hasVal)
		case "error-event":
			b.ErrorEv = orDefault(val, "server_error")
		case "failed":
			b.Failed = orDefault(val, "server_error")
		case "incomplete":
			b.Incomp = orDefault(val, "max_output_tokens")
		case "mcp-error":
			switch val {
			case "list", "list-in-stream", "call":
				b.MCPError = val
			default:
				err = fmt.Errorf("want list, list-in-stream or call")
			}
		default:
			return Behavior{}, fmt.Errorf("unknown behavior %q (known: first-event-delay, event-delay, deltas, delta-size, status, quota, retry-after, times, stall, at, cut, error-event, failed, incomplete, mcp-error)", key)
		}
		if err != nil {
			return Behavior{}, fmt.Errorf("behavior %q: %w", p, err)
		}
	}
	if b.Quota && b.Status != 429 {
		return Behavior{}, fmt.Errorf("behavior quota answers 429: it cannot go with status=%d", b.Status)
	}
	if b.Status == 429 && b.RetryAfter == "" && !b.Quota {
		b.RetryAfter = "1"
	}
	if b.Stall != 0 && b.At < 0 {
		b.At = 0 // a stall without a position stalls before the first byte
	}
	b.spec = strings.Join(parts, ";")
	return b, nil
}

// merge overlays o's settings on b: a request's header refines the binary's
// defaults key by key.
func (b Behavior) merge(o Behavior) Behavior {
	if o.spec == "" {
		return b
	}
	if b.spec == "" {
		return o
	}
	m, _ := ParseBehavior(b.spec + ";" + o.spec)
	return m
}

func parseDur(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration such as 250ms or 2s")
	}
	return d, nil
}

func parsePositive(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("want a whole number >= 1")
	}
	return n, nil
}

func noValue(has bool) error {
	if has {
		return fmt.Errorf("takes no value")
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// directiveRE finds "[emulator: ...]" in a user message, so a person (or a
// browser test) can select a behavior without control over headers.
var directiveRE = regexp.MustCompile(`\[emulator:([^\]]*)\]`)

// faultCounter implements Times: how many requests each spec has faulted.
type faultCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// take reports whether b's faults apply to this request.
func (c *faultCounter) take(b Behavior) bool {
	if b.Times == 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	if c.n[b.spec] >= b.Times {
		return false
	}
	c.n[b.spec]++
	return true
}
