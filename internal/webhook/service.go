package webhook

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"log/slog"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/policy"
)

// URLChecker is the network policy for URLs Toolgate calls itself
// (netguard.Guard): it says why a URL may not be reached.
type URLChecker interface {
	CheckURL(ctx context.Context, raw string) error
}

// Service manages webhooks for admins.
type Service struct {
	store Store
	urls  URLChecker // nil: every URL is accepted at registration (the dispatcher still dials through its own policy)
	log   *slog.Logger
	// wake, when set, is called after a ping is queued, so this replica's
	// dispatcher sends it at once.
	wake func()
}

// NewService returns a Service over store; wake (nil: none) is called
// after a ping is queued, so this replica's dispatcher sends it at once.
func NewService(store Store, urls URLChecker, log *slog.Logger, wake func()) *Service {
	return &Service{store: store, urls: urls, log: log, wake: wake}
}

// MaxDeliveries bounds the delivery log one request returns.
const MaxDeliveries = 100

var errNotFound = apperr.NotFoundf("webhook_not_found", "there is no webhook with that id; list them with GET /api/webhooks")

func requireAdmin(ctx context.Context) (auth.User, error) {
	u, ok := auth.UserFrom(ctx)
	if !ok || u.ID == "" {
		return u, auth.Unauthenticated()
	}
	if !u.IsAdmin() {
		return u, auth.AdminOnly()
	}
	return u, nil
}

// List returns every webhook.
func (s *Service) List(ctx context.Context) ([]Webhook, error) {
	if _, err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	ws, err := s.store.ListWebhooks(ctx)
	if ws == nil {
		ws = []Webhook{}
	}
	return ws, err
}

// Get returns one webhook.
func (s *Service) Get(ctx context.Context, id string) (Webhook, error) {
	if _, err := requireAdmin(ctx); err != nil {
		return Webhook{}, err
	}
	return s.get(ctx, id)
}

func (s *Service) get(ctx context.Context, id string) (Webhook, error) {
	w, err := s.store.Webhook(ctx, id)
	if apperr.KindOf(err) == apperr.NotFound {
		return w, errNotFound
	}
	return w, err
}

// Create registers a webhook; the answer carries its secret, the only time
// it is shown.
func (s *Service) Create(ctx context.Context, in Input) (Webhook, error) {
	u, err := requireAdmin(ctx)
	if err != nil {
		return Webhook{}, err
	}
	w := Webhook{ID: newID("wh_"), Enabled: true}
	if err := in.apply(&w, true); err != nil {
		return w, err
	}
	if err := s.checkURL(ctx, w.RawURL); err != nil {
		return w, err
	}
	if w.Secret == "" {
		w.Secret = NewSecret()
	}
	w.URL = policy.MaskURL(w.RawURL)
	return s.store.CreateWebhook(ctx, w, auditEntry(u, ActionCreate, nil, &w))
}

// Update changes a webhook.
func (s *Service) Update(ctx context.Context, id string, in Input) (Webhook, error) {
	u, err := requireAdmin(ctx)
	if err != nil {
		return Webhook{}, err
	}
	w, err := s.store.UpdateWebhook(ctx, id, func(w *Webhook) (policy.AuditEntry, error) {
		before := *w
		if err := in.apply(w, false); err != nil {
			return policy.AuditEntry{}, err
		}
		if w.RawURL != before.RawURL {
			if err := s.checkURL(ctx, w.RawURL); err != nil {
				return policy.AuditEntry{}, err
			}
		}
		w.URL = policy.MaskURL(w.RawURL)
		return auditEntry(u, ActionUpdate, &before, w), nil
	})
	if apperr.KindOf(err) == apperr.NotFound {
		return w, errNotFound
	}
	return w, err
}

// Delete removes a webhook and its delivery log; queued deliveries are
// dropped.
func (s *Service) Delete(ctx context.Context, id string) error {
	u, err := requireAdmin(ctx)
	if err != nil {
		return err
	}
	err = s.store.DeleteWebhook(ctx, id, func(w Webhook) policy.AuditEntry { return auditEntry(u, ActionDelete, &w, nil) })
	if apperr.KindOf(err) == apperr.NotFound {
		return errNotFound
	}
	return err
}

// Test queues a ping to the webhook (enabled or not), sent at once.
func (s *Service) Test(ctx context.Context, id string) (Delivery, error) {
	u, err := requireAdmin(ctx)
	if err != nil {
		return Delivery{}, err
	}
	if _, err := s.get(ctx, id); err != nil {
		return Delivery{}, err
	}
	data, _ := json.Marshal(map[string]string{"webhook_id": id, "requested_by": u.Email})
	d, err := s.store.EnqueuePing(ctx, id, data)
	if apperr.KindOf(err) == apperr.NotFound {
		return d, errNotFound
	}
	if err == nil && s.wake != nil {
		s.wake()
	}
	return d, err
}

// Deliveries returns the webhook's latest deliveries with their attempts.
func (s *Service) Deliveries(ctx context.Context, id string) ([]Delivery, error) {
	if _, err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	if _, err := s.get(ctx, id); err != nil {
		return nil, err
	}
	ds, err := s.store.Deliveries(ctx, id, MaxDeliveries)
	if ds == nil {
		ds = []Delivery{}
	}
	return ds, err
}

func (s *Service) checkURL(ctx context.Context, raw string) error {
	if s.urls == nil {
		return nil
	}
	if err := s.urls.CheckURL(ctx, raw); err != nil {
		return apperr.Invalidf("url_not_allowed", "url", "the webhook's url is not allowed: %s", err.Error())
	}
	return nil
}

// snapshot is a webhook as the audit log shows it: no secret, query values
// masked.
func snapshot(w *Webhook) any {
	if w == nil {
		return nil
	}
	return map[string]any{"id": w.ID, "url": policy.MaskURL(w.RawURL), "description": w.Description, "events": w.Events, "enabled": w.Enabled}
}

func auditEntry(u auth.User, action string, before, after *Webhook) policy.AuditEntry {
	b, _ := json.Marshal(snapshot(before))
	a, _ := json.Marshal(snapshot(after))
	return policy.AuditEntry{Actor: u.Email, ActorID: u.ID, Action: action, Before: b, After: a}
}

// NewSecret returns a fresh signing secret: "whsec_" and 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b)
}

func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}
