package config

import (
	"fmt"
	"time"
)

// The bounds of APPROVAL_TTL: shorter than a minute leaves no time to read
// a card; longer than a week keeps the provider's response waiting past
// the time providers keep responses anyway.
const (
	minApprovalTTL = time.Minute
	maxApprovalTTL = 7 * 24 * time.Hour
)

func loadApprovalTTL(get func(string, string) string, errs *[]string) time.Duration {
	raw := get("APPROVAL_TTL", "30m")
	d, err := time.ParseDuration(raw)
	if err != nil || d < minApprovalTTL || d > maxApprovalTTL {
		*errs = append(*errs, fmt.Sprintf("APPROVAL_TTL must be a duration from 1m to 168h with a unit, such as 30m (got %q)", raw))
	}
	return d
}
