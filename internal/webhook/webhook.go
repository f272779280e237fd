// Package webhook sends signed JSON to the URLs an admin registers when an
// approval request waits (approval.required) or a decision is recorded
// (decision.recorded).
//
// Deliveries are an outbox in the database: the statement that stores a
// conversation's events also queues one delivery per enabled webhook that
// wants the event (internal/postgres, AppendEvents), so nothing is queued
// for an event that was not stored, and nothing stored goes unqueued. Every
// replica runs a Dispatcher that claims due deliveries under a lease: one
// replica sends each attempt, and one that dies mid-send leaves a lease
// that runs out, after which another sends again (at least once; receivers
// dedupe on the Toolgate-Delivery header).
package webhook

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/policy"
)

// The events a webhook can ask for: the SSE event names of
// docs/sse-events.md. EventPing is what POST /api/webhooks/{id}/test sends.
const (
	EventApprovalRequired = "approval.required"
	EventDecisionRecorded = "decision.recorded"
	EventPing             = "ping"
)

// Events are those a webhook may subscribe to.
var Events = []string{EventApprovalRequired, EventDecisionRecorded}

// Delivery states.
const (
	StatePending   = "pending"   // waiting for its next attempt (or being sent)
	StateDelivered = "delivered" // the receiver answered 2xx
	StateFailed    = "failed"    // every attempt failed; no more are made
)

// Audit actions of webhook changes.
const (
	ActionCreate = "webhook.create"
	ActionUpdate = "webhook.update"
	ActionDelete = "webhook.delete"
)

// Webhook is a registered receiver.
type Webhook struct {
	ID          string    `json:"id"`
	URL         string    `json:"url"` // as the API shows it: query values masked
	Description string    `json:"description"`
	Events      []string  `json:"events"`
	Enabled     bool      `json:"enabled"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// RawURL is the URL as stored, with its query values: only the
	// dispatcher sees it.
	RawURL string `json:"-"`
	// Secret signs the deliveries; shown once, in the answer to create
	// (the store does not read it back).
	Secret string `json:"-"`
}

// Delivery is one event queued for one webhook, with its attempts.
type Delivery struct {
	ID             string     `json:"id"`
	WebhookID      string     `json:"webhook_id"`
	Event          string     `json:"event"`
	ConversationID *string    `json:"conversation_id"`
	State          string     `json:"state"`
	Attempts       int        `json:"attempts"`
	Status         *int       `json:"status"`     // the last attempt's HTTP status
	Error          *string    `json:"error"`      // the last attempt's failure
	LatencyMS      *int       `json:"latency_ms"` // the last attempt's duration
	NextAttemptAt  *time.Time `json:"next_attempt_at"`
	DeliveredAt    *time.Time `json:"delivered_at"`
	CreatedAt      time.Time  `json:"created_at"`
	Log            []Attempt  `json:"attempt_log"`
}

// Attempt is one try at sending a delivery.
type Attempt struct {
	Attempt   int       `json:"attempt"`
	At        time.Time `json:"at"`
	Status    *int      `json:"status"`
	Error     *string   `json:"error"`
	LatencyMS int       `json:"latency_ms"`
}

// Claimed is a delivery a dispatcher holds the lease on, with what it needs
// to send it.
type Claimed struct {
	ID                string
	WebhookID         string
	URL               string // the real URL
	Secret            string
	Event             string
	ConversationID    string
	ConversationTitle string
	Data              json.RawMessage // the SSE event's payload, as stored (arguments redacted)
	CreatedAt         time.Time
	Attempt           int // 1 for the first
	// SecretErr says the secret could not be decrypted (another
	// SECRETS_KEY sealed it): the attempt fails saying so.
	SecretErr error
	// Links are the approve and deny links of an approval.required
	// delivery, made when it is sent (Dispatcher.Links); nil: none.
	Links *DecisionLinks
}

// Result is how an attempt ended.
type Result struct {
	DeliveryID string
	Attempt    int
	Status     int    // 0: no HTTP answer
	Error      string // "" when delivered
	Latency    time.Duration
	State      string    // StatePending (retry at NextAttemptAt), StateDelivered or StateFailed
	NextAt     time.Time // with StatePending
}

// Store keeps webhooks and their deliveries (internal/postgres).
type Store interface {
	ListWebhooks(ctx context.Context) ([]Webhook, error)
	Webhook(ctx context.Context, id string) (Webhook, error)
	// CreateWebhook stores w and writes audit in one transaction.
	CreateWebhook(ctx context.Context, w Webhook, audit policy.AuditEntry) (Webhook, error)
	// UpdateWebhook locks the webhook, lets change edit it and returns the
	// audit entry to write with the update; not_found when it is gone.
	UpdateWebhook(ctx context.Context, id string, change func(*Webhook) (policy.AuditEntry, error)) (Webhook, error)
	// DeleteWebhook deletes it (and its deliveries) and writes the audit
	// entry audit makes of what was deleted.
	DeleteWebhook(ctx context.Context, id string, audit func(Webhook) policy.AuditEntry) error
	// EnqueuePing queues a ping for the webhook, due now.
	EnqueuePing(ctx context.Context, webhookID string, data json.RawMessage) (Delivery, error)
	// Deliveries lists the webhook's latest deliveries, newest first.
	Deliveries(ctx context.Context, webhookID string, limit int) ([]Delivery, error)

	// Claim takes up to limit due deliveries for owner for lease, counting
	// an attempt on each; it first marks failed the deliveries that used
	// their maxAttempts on a lease that ran out (a replica died sending).
	Claim(ctx context.Context, owner string, lease time.Duration, maxAttempts, limit int) ([]Claimed, error)
	// Record stores how an attempt ended, if owner still holds the lease
	// for that attempt (the attempt itself is logged regardless).
	Record(ctx context.Context, owner string, r Result) error
	// Prune deletes finished deliveries created before before.
	Prune(ctx context.Context, before time.Time) (int64, error)
}

// Input is what create and update take; nil fields are left as they are
// (create requires url and events).
type Input struct {
	URL         *string   `json:"url"`
	Description *string   `json:"description"`
	Events      *[]string `json:"events"`
	Enabled     *bool     `json:"enabled"`
	// Secret, on create only: the signing secret to use instead of one
	// Toolgate generates.
	Secret *string `json:"secret"`
}

// Limits on what a webhook holds.
const (
	MaxURLLen         = 2000
	MaxDescriptionLen = 200
	MinSecretLen      = 16
	MaxSecretLen      = 200
)

// apply validates in and sets it on w, reporting every problem at once.
func (in Input) apply(w *Webhook, create bool) error {
	f := apperr.Fields{}
	if in.URL != nil {
		if *in.URL != w.URL || create { // the masked URL the API showed keeps the stored one
			validateURL(f, *in.URL)
			w.RawURL = *in.URL
		}
	} else if create {
		f.Add("url", "url is required: the http(s) address Toolgate POSTs events to")
	}
	if in.Description != nil {
		d := strings.TrimSpace(*in.Description)
		if len([]rune(d)) > MaxDescriptionLen {
			f.Add("description", "description must be at most %d characters", MaxDescriptionLen)
		}
		w.Description = d
	}
	if in.Events != nil {
		validateEvents(f, *in.Events)
		w.Events = slices.Clone(*in.Events)
	} else if create {
		f.Add("events", "events is required: a list of %s", strings.Join(Events, ", "))
	}
	if in.Enabled != nil {
		w.Enabled = *in.Enabled
	}
	if in.Secret != nil {
		if !create {
			f.Add("secret", "secret can only be given when creating a webhook; delete and create it again to change the secret")
		} else if n := len(*in.Secret); n < MinSecretLen || n > MaxSecretLen || strings.TrimSpace(*in.Secret) != *in.Secret {
			f.Add("secret", "secret must be %d to %d characters without leading or trailing spaces (or leave it out and Toolgate generates one)", MinSecretLen, MaxSecretLen)
		} else {
			w.Secret = *in.Secret
		}
	}
	return f.Err("invalid_webhook", "the webhook is invalid: "+f.Join())
}

func validateURL(f apperr.Fields, raw string) {
	u, err := url.Parse(raw)
	switch {
	case len(raw) > MaxURLLen:
		f.Add("url", "url must be at most %d characters", MaxURLLen)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "":
		f.Add("url", "url must be an absolute http or https URL such as https://hooks.example.com/toolgate")
	case u.User != nil:
		f.Add("url", "url must not carry a user name or password; put a token in the query string if the receiver needs one")
	case u.Fragment != "":
		f.Add("url", "url must not have a #fragment (it is never sent)")
	}
}

func validateEvents(f apperr.Fields, evs []string) {
	if len(evs) == 0 {
		f.Add("events", "events must name at least one of %s", strings.Join(Events, ", "))
		return
	}
	seen := map[string]bool{}
	for _, e := range evs {
		if !slices.Contains(Events, e) {
			f.Add("events", "events may only hold %s (got %q)", strings.Join(Events, ", "), e)
			return
		}
		if seen[e] {
			f.Add("events", "events names %q twice", e)
			return
		}
		seen[e] = true
	}
}

// Channel is the NOTIFY channel on which queued deliveries wake every
// replica's dispatcher.
const Channel = "toolgate_webhooks"
