// Package faults marks the points where a test build of Toolgate (go build
// -tags faultinject) can be killed, to prove what survives a crash there.
// In normal builds Crash does nothing.
package faults

// EnvCrashAt is the environment variable that names the point at which a
// faultinject build kills itself.
const EnvCrashAt = "TOOLGATE_CRASH_AT"

// The crash points.
const (
	// FollowUpBeforeSend is after a follow-up's turn was claimed (its
	// answers recorded as sent, committed), before the request leaves.
	FollowUpBeforeSend = "follow-up-before-send"
	// GatewayAfterForward is in the MCP face, after the real server
	// answered a call and before its result is stored (the only crash
	// that leaves an approved call outcome_unknown in gateway mode).
	GatewayAfterForward = "gateway-after-forward"
)
