package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/toolgate/toolgate/internal/conversation"
)

// The causes a watchdog cancels a stream's context with.
var (
	errFirstByteTimeout = errors.New("responses: no event within the first-byte timeout")
	errIdleTimeout      = errors.New("responses: no event within the idle timeout")
)

// watchdog ends a stream whose provider stays silent: it cancels the
// stream's context (which aborts the HTTP request and its body) when no
// event arrives within firstByte of sending a request, or, once the answer
// streams, within idle of waiting for the next one. Its timers run only
// while the stream waits for the provider, never while the caller handles
// an event. A zero duration disables that timeout.
type watchdog struct {
	ctx       context.Context
	cancel    context.CancelCauseFunc
	firstByte time.Duration
	idle      time.Duration

	mu    sync.Mutex
	first *time.Timer // armed per attempt until the first event
	next  *time.Timer // armed while waiting for each later event
}

func newWatchdog(parent context.Context, firstByte, idle time.Duration) *watchdog {
	ctx, cancel := context.WithCancelCause(parent)
	return &watchdog{ctx: ctx, cancel: cancel, firstByte: firstByte, idle: idle}
}

// waitFirst (re)starts the wait for the first event: at every attempt of
// the request, so a retry gets the whole time again.
func (w *watchdog) waitFirst() { w.arm(&w.first, w.firstByte, errFirstByteTimeout) }

// waitNext starts the wait for the next event of a streaming answer.
func (w *watchdog) waitNext() { w.arm(&w.next, w.idle, errIdleTimeout) }

// arm starts (or restarts) *t to cancel the request with cause after d;
// d <= 0 means no limit.
func (w *watchdog) arm(t **time.Timer, d time.Duration, cause error) {
	if d <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if *t == nil {
		*t = time.AfterFunc(d, func() { w.cancel(cause) })
		return
	}
	(*t).Reset(d)
}

// pause stops the timers: an event arrived (or the wait is over).
func (w *watchdog) pause() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range []*time.Timer{w.first, w.next} {
		if t != nil {
			t.Stop()
		}
	}
}

// stop ends the watchdog and the stream's context; safe from any goroutine.
func (w *watchdog) stop() {
	w.pause()
	w.cancel(nil)
}

// timedOut is the error for a stream the watchdog ended, or nil.
func (w *watchdog) timedOut() *conversation.UpstreamError {
	switch cause := context.Cause(w.ctx); {
	case errors.Is(cause, errFirstByteTimeout):
		return &conversation.UpstreamError{Code: conversation.CodeFirstByteTimeout, MaybeDelivered: true,
			Message: fmt.Sprintf("the model's provider sent nothing within %s of the request (UPSTREAM_FIRST_BYTE_TIMEOUT), so the request was abandoned", w.firstByte)}
	case errors.Is(cause, errIdleTimeout):
		return &conversation.UpstreamError{Code: conversation.CodeIdleTimeout, MaybeDelivered: true,
			Message: fmt.Sprintf("the model's provider sent nothing for %s in the middle of its answer (UPSTREAM_IDLE_TIMEOUT), so the stream was abandoned", w.idle)}
	}
	return nil
}

// middleware runs around every attempt of a request: it restarts the wait
// for the first event, and marks a 429 insufficient_quota answer as not to
// be retried (openai-go retries every 429 unless x-should-retry says no).
func (w *watchdog) middleware() option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		w.waitFirst()
		res, err := next(req)
		if err == nil && res != nil && res.StatusCode == http.StatusTooManyRequests && quotaExceeded(res) {
			res.Header.Set("X-Should-Retry", "false")
		}
		return res, err
	}
}

// maxErrorPeek bounds how much of an error body quotaExceeded reads.
const maxErrorPeek = 64 << 10

// quotaExceeded reports whether res's error body is OpenAI's
// insufficient_quota ({"error":{"code" or "type":"insufficient_quota"}}).
// It puts back what it read, so the SDK still sees the whole body.
func quotaExceeded(res *http.Response) bool {
	if res.Body == nil {
		return false
	}
	peek, err := io.ReadAll(io.LimitReader(res.Body, maxErrorPeek))
	res.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(peek), res.Body), res.Body}
	if err != nil {
		return false
	}
	var body struct {
		Error struct {
			Code *string `json:"code"`
			Type string  `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal(peek, &body) != nil {
		return false
	}
	q := conversation.ProviderCodeInsufficientQuota
	return (body.Error.Code != nil && *body.Error.Code == q) || body.Error.Type == q
}
