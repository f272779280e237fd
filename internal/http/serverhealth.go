package http

import (
	"time"

	"github.com/toolgate/toolgate/internal/policy"
)

// healthView is a server's health as the API shows it (docs/openapi.yaml,
// ServerHealth): whether it could be reached when last checked, and while
// it cannot, since when and why. Requests leave unreachable and slow
// servers out.
type healthView struct {
	Status    policy.HealthStatus `json:"status"`
	Since     *time.Time          `json:"since"`
	LastError *string             `json:"last_error"`
	CheckedAt *time.Time          `json:"checked_at"`
	OKAt      *time.Time          `json:"ok_at"`
	ListMS    *int                `json:"list_ms"`
	Failures  int                 `json:"failures"`
}

func newHealthView(h policy.Health) healthView {
	v := healthView{Status: h.Status, Since: h.Since, CheckedAt: h.CheckedAt, OKAt: h.OKAt, ListMS: h.ListMS, Failures: h.Failures}
	if v.Status == "" {
		v.Status = policy.HealthUnknown
	}
	if h.LastError != "" {
		v.LastError = &h.LastError
	}
	return v
}
