package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Dispatcher sends the deliveries that are due. Every replica runs one;
// the store's claim keeps them from sending the same attempt twice.
type Dispatcher struct {
	Store Store
	// Client sends the requests: its transport should dial through the
	// URL policy (netguard), and it must not follow redirects.
	Client    *http.Client
	Owner     string // this replica's id, the lease owner
	PublicURL string // where people open Toolgate, for the links in payloads
	// Links makes the approve and deny links of approval.required
	// deliveries (nil: they carry none).
	Links LinkMinter
	Log   *slog.Logger
	Config
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	wake      chan struct{}
	once      sync.Once
	lastPrune time.Time
}

// Retention is how long finished deliveries stay in the log; they are
// pruned about once an hour.
const Retention = 30 * 24 * time.Hour

// Config is the retry schedule and limits (WEBHOOK_* variables).
type Config struct {
	// MaxAttempts is how many times a delivery is tried before it is
	// marked failed (WEBHOOK_MAX_ATTEMPTS, default 6).
	MaxAttempts int
	// RetryBase is the wait after the first failure; each next one is
	// three times longer, ±20% jitter, at most RetryMax
	// (WEBHOOK_RETRY_BASE, default 30s: 30s, 1m30s, 4m30s, 13m30s,
	// 40m30s, about an hour in all).
	RetryBase time.Duration
	RetryMax  time.Duration
	// Timeout bounds one request (WEBHOOK_TIMEOUT, default 10s).
	Timeout time.Duration
	// Lease is how long a claimed delivery stays with this replica before
	// another may send it again; longer than Timeout.
	Lease time.Duration
	// Poll is how often due deliveries are looked for without a wake-up
	// (retries come due on their own; a notification may be lost).
	Poll time.Duration
	// Batch and Parallel bound one round.
	Batch, Parallel int
}

// DefaultConfig is the production schedule.
func DefaultConfig() Config {
	return Config{MaxAttempts: 6, RetryBase: 30 * time.Second, RetryMax: time.Hour, Timeout: 10 * time.Second,
		Lease: 2 * time.Minute, Poll: 2 * time.Second, Batch: 20, Parallel: 4}
}

func (d *Dispatcher) init() {
	d.once.Do(func() {
		d.wake = make(chan struct{}, 1)
		def := DefaultConfig()
		c := &d.Config
		if c.MaxAttempts <= 0 {
			c.MaxAttempts = def.MaxAttempts
		}
		if c.RetryBase <= 0 {
			c.RetryBase = def.RetryBase
		}
		if c.RetryMax <= 0 {
			c.RetryMax = def.RetryMax
		}
		if c.Timeout <= 0 {
			c.Timeout = def.Timeout
		}
		if c.Lease <= c.Timeout {
			c.Lease = max(def.Lease, 3*c.Timeout)
		}
		if c.Poll <= 0 {
			c.Poll = def.Poll
		}
		if c.Batch <= 0 {
			c.Batch = def.Batch
		}
		if c.Parallel <= 0 {
			c.Parallel = def.Parallel
		}
		if d.Now == nil {
			d.Now = time.Now
		}
		if d.Log == nil {
			d.Log = slog.New(slog.DiscardHandler)
		}
	})
}

// NewClient returns the HTTP client deliveries use: through transport
// (the URL policy's), with the timeout, never following a redirect (a
// 3xx counts as a failure).
func NewClient(transport http.RoundTripper, timeout time.Duration) *http.Client {
	return &http.Client{Transport: transport, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Wake makes Run look for due deliveries now (a NOTIFY arrived, or a ping
// was queued here).
func (d *Dispatcher) Wake() {
	d.init()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run sends due deliveries until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) {
	d.init()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-t.C:
		}
		d.prune(ctx)
		for ctx.Err() == nil {
			n, err := d.RunOnce(ctx)
			if err != nil {
				if ctx.Err() == nil {
					d.Log.WarnContext(ctx, "webhook deliveries could not be claimed", "error", err)
				}
				break
			}
			if n < d.Batch {
				break
			}
		}
		t.Reset(d.Poll)
	}
}

func (d *Dispatcher) prune(ctx context.Context) {
	if d.Now().Sub(d.lastPrune) < time.Hour {
		return
	}
	d.lastPrune = d.Now()
	if n, err := d.Store.Prune(ctx, d.Now().Add(-Retention)); err != nil {
		d.Log.WarnContext(ctx, "the webhook delivery log could not be pruned", "error", err)
	} else if n > 0 {
		d.Log.InfoContext(ctx, "pruned the webhook delivery log", "deleted", n, "older_than", Retention)
	}
}

// RunOnce claims one batch of due deliveries, sends them and records how
// each went; it returns how many it claimed.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	d.init()
	claimed, err := d.Store.Claim(ctx, d.Owner, d.Lease, d.MaxAttempts, d.Batch)
	if err != nil {
		return 0, err
	}
	sem := make(chan struct{}, d.Parallel)
	var wg sync.WaitGroup
	for _, c := range claimed {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			d.deliver(ctx, c)
		}()
	}
	wg.Wait()
	return len(claimed), nil
}

func (d *Dispatcher) deliver(ctx context.Context, c Claimed) {
	start := d.Now()
	status, sendErr := d.send(ctx, c)
	r := Result{DeliveryID: c.ID, Attempt: c.Attempt, Status: status, Latency: d.Now().Sub(start), State: StateDelivered}
	if sendErr != nil {
		if ctx.Err() != nil {
			return // shutting down: the lease runs out and another replica (or this one, restarted) sends it again
		}
		r.Error = sendErr.Error()
		r.State, r.NextAt = StatePending, d.Now().Add(d.Backoff(c.Attempt))
		if c.Attempt >= d.MaxAttempts {
			r.State, r.NextAt = StateFailed, time.Time{}
		}
	}
	// The result is recorded even while shutting down: it happened.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := d.Store.Record(rctx, d.Owner, r); err != nil {
		d.Log.WarnContext(ctx, "a webhook delivery's result could not be recorded; it will be sent again", "delivery_id", c.ID, "error", err)
	}
	level := slog.LevelInfo
	if r.State != StateDelivered {
		level = slog.LevelWarn
	}
	d.Log.Log(ctx, level, "webhook delivery", "delivery_id", c.ID, "webhook_id", c.WebhookID, "event", c.Event,
		"attempt", c.Attempt, "status", status, "state", r.State, "error", r.Error, "duration", r.Latency)
}

// maxResponseRead bounds how much of a receiver's answer is read (and
// thrown away) so the connection can be reused.
const maxResponseRead = 64 << 10

func (d *Dispatcher) send(ctx context.Context, c Claimed) (int, error) {
	if c.SecretErr != nil {
		return 0, c.SecretErr
	}
	if err := d.withLinks(ctx, &c); err != nil {
		return 0, err
	}
	body, err := BuildPayload(c, d.PublicURL)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("the webhook's url cannot be used: %w", unwrapURL(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Toolgate-Webhook/1")
	req.Header.Set(HeaderEvent, c.Event)
	req.Header.Set(HeaderDelivery, c.ID)
	req.Header.Set(HeaderSignature, Sign(c.Secret, d.Now(), body))
	resp, err := d.Client.Do(req)
	if err != nil {
		return 0, unwrapURL(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseRead))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return resp.StatusCode, fmt.Errorf("the receiver answered %s; redirects are not followed, register the URL it redirects to", resp.Status)
		}
		return resp.StatusCode, fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}

// unwrapURL drops the *url.Error wrapper, whose message repeats the URL
// and so any secret in its query string.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return errors.New("no answer within the timeout")
		}
		return ue.Err
	}
	return err
}

// Backoff is the wait after failed attempt n (1 for the first): RetryBase
// times 3^(n-1), ±20%, at most RetryMax.
func (d *Dispatcher) Backoff(n int) time.Duration {
	d.init()
	w := d.RetryBase
	for i := 1; i < n && w < d.RetryMax; i++ {
		w *= 3
	}
	w = min(w, d.RetryMax)
	jitter := time.Duration((rand.Float64()*0.4 - 0.2) * float64(w))
	return w + jitter
}
