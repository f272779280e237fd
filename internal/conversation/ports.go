package conversation

// Info describes the upstream for the browser.
type Info struct {
	Offline bool   `json:"offline"` // talking to the built-in emulator, not a real model
	Model   string `json:"model"`
	Layout  string `json:"tool_layout"`
	BaseURL string `json:"base_url"`
}

// Limits on input.
const (
	MaxInputLen  = 32000
	MaxTitleLen  = 200
	MaxReasonLen = 2000
)

// Limits are the per-user limits on starting turns. Zero means no limit.
type Limits struct {
	// MaxConcurrentTurns is how many of a user's conversations may run a
	// turn at once (USER_MAX_CONCURRENT_TURNS).
	MaxConcurrentTurns int
	// MessagesPerMinute is how many messages a user may send in a window
	// of a minute, from the first after the previous window closed
	// (USER_MESSAGES_PER_MINUTE).
	MessagesPerMinute int
}
