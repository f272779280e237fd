package responses_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/responses"
)

// quotaBody is OpenAI's answer for an account out of quota or credit.
const quotaBody = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`

// A 429 insufficient_quota is not a rate limit: retrying cannot help, so
// even a request that may retry is sent once, and the error is not
// retryable. The body's type alone says so too.
func TestQuotaExceededIsNeverRetried(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"code and type": quotaBody,
		"type only":     `{"error":{"message":"quota","type":"insufficient_quota","param":null,"code":null}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			api := startFakeAPI(t, http.StatusTooManyRequests, "application/json", []byte(body))
			c := responses.New(responses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: model, MaxRetries: 2})
			_, err := c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hello", Retry: true})
			var ue *conversation.UpstreamError
			if !errors.As(err, &ue) || ue.Status != http.StatusTooManyRequests || ue.Code != conversation.ProviderCodeInsufficientQuota ||
				!ue.QuotaExceeded() || ue.Retryable() || ue.Message == "" {
				t.Fatalf("err = %#v, want a non-retryable UpstreamError 429 insufficient_quota with the message", err)
			}
			if n := len(api.Requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

// The emulator's quota behavior answers what OpenAI does.
func TestEmulatorQuota(t *testing.T) {
	t.Parallel()
	c := responses.New(responses.Config{BaseURL: startEmulator(t), APIKey: "sk-test", Model: model, MaxRetries: 2, HTTPClient: behaviorClient("quota")})
	_, err := c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hello", Retry: true})
	var ue *conversation.UpstreamError
	if !errors.As(err, &ue) || !ue.QuotaExceeded() || ue.Retryable() || !strings.Contains(ue.Message, "plan and billing") {
		t.Fatalf("err = %#v, want UpstreamError insufficient_quota", err)
	}
}

// silentAPI answers POST /v1/responses with head (SSE frames; "" sends no
// headers either), then stays silent until the client leaves, which it
// reports on left.
func silentAPI(t *testing.T, head string) (base string, left <-chan struct{}, requests *atomic.Int32) {
	t.Helper()
	ch := make(chan struct{}, 8)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices the client leave
		if head != "" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(head))
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
			ch <- struct{}{}
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/", ch, &n
}

func wantLeft(t *testing.T, left <-chan struct{}) {
	t.Helper()
	select {
	case <-left:
	case <-time.After(5 * time.Second):
		t.Error("the provider's request was not cancelled: the connection is still open")
	}
}

func TestFirstByteTimeout(t *testing.T) {
	t.Parallel()
	for name, head := range map[string]string{
		"no answer at all":     "",
		"headers but no event": ": still thinking\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base, left, n := silentAPI(t, head)
			c := responses.New(responses.Config{BaseURL: base, APIKey: "sk-test", Model: model, MaxRetries: 2,
				FirstByteTimeout: 200 * time.Millisecond, IdleTimeout: time.Minute})
			start := time.Now()
			// Retry: a timeout is still not retried on its own.
			es, err := c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hello", Retry: true})
			var ue *conversation.UpstreamError
			if es != nil || !errors.As(err, &ue) || ue.Code != conversation.CodeFirstByteTimeout || !ue.Retryable() ||
				!ue.MaybeDelivered || !strings.Contains(ue.Message, "200ms") {
				t.Fatalf("Stream = (stream %v), %#v; want UpstreamError %s saying how long it waited", es != nil, err, conversation.CodeFirstByteTimeout)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Stream took %s with a 200ms first-byte timeout", d)
			}
			wantLeft(t, left)
			if got := n.Load(); got != 1 {
				t.Errorf("%d requests, want 1", got)
			}
		})
	}
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	created := frame(t, `{"type":"response.created","sequence_number":0,"response":{"id":"resp_idle","object":"response","created_at":1,"status":"in_progress","model":"gpt-4.1","output":[]}}`)
	base, left, _ := silentAPI(t, created)
	c := responses.New(responses.Config{BaseURL: base, APIKey: "sk-test", Model: model,
		FirstByteTimeout: time.Minute, IdleTimeout: 200 * time.Millisecond})
	s := stream(t, c, conversation.UpstreamRequest{UserText: "hello"})
	var ue *conversation.UpstreamError
	if !errors.As(s.Err, &ue) || ue.Code != conversation.CodeIdleTimeout || !ue.Retryable() || !strings.Contains(ue.Message, "200ms") {
		t.Fatalf("Err = %#v, want UpstreamError %s saying how long it waited", s.Err, conversation.CodeIdleTimeout)
	}
	if len(s.Events) != 1 || s.Events[0].Kind != conversation.EventCreated || s.Events[0].ResponseID != "resp_idle" {
		t.Errorf("events %s, want what arrived before the silence", s.describe())
	}
	wantLeft(t, left)
}

// The timeouts bound each wait, not the answer: a stream slower in total
// than both, whose events each come in time, completes. Through the
// emulator, with MCP tools listed and called.
func TestSlowSteadyStreamCompletes(t *testing.T) {
	t.Parallel()
	d := startDemo(t)
	c := responses.New(responses.Config{BaseURL: startEmulator(t), APIKey: "sk-test", Model: model,
		FirstByteTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond,
		// The first wait and the one after it take longer together than
		// either timeout: the first-byte timeout ends with the first event.
		HTTPClient: behaviorClient("first-event-delay=200ms; event-delay=150ms; deltas=4")})
	start := time.Now()
	s := stream(t, c, conversation.UpstreamRequest{UserText: "hello", Tools: d.groups([]string{"get_forecast"}, nil)})
	s.mustComplete(t)
	if took := time.Since(start); took < 600*time.Millisecond {
		t.Errorf("the stream took %s: too fast to show that the timeouts are per wait", took)
	}
}
