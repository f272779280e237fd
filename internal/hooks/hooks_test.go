package hooks_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/hooks"
)

const secret = "tghook_test-secret"

// receiver is a local hook: it verifies each request's signature (a request
// that fails verification gets 401, which Ask treats as ask) and answers
// with reply.
func receiver(t *testing.T, reply func(w http.ResponseWriter, got hooks.Request)) (*httptest.Server, chan hooks.Request) {
	t.Helper()
	seen := make(chan hooks.Request, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := hooks.Verify(secret, r.Header.Get(hooks.SignatureHeader), body, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var req hooks.Request
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		seen <- req
		reply(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv, seen
}

func answer(body string) func(http.ResponseWriter, hooks.Request) {
	return func(w http.ResponseWriter, _ hooks.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}

func sample() hooks.Request {
	return hooks.Request{Hook: hooks.HookServer, Server: "demo", Tool: "get_forecast",
		Arguments: json.RawMessage(`{"city":"Test","api_key":"[redacted]"}`), Redacted: []string{"api_key"},
		User: hooks.User{ID: "u1", Email: "a@example.com", Role: "member"}, ConversationID: "conv_1", ApprovalRequestID: "mcpr_1"}
}

func TestAsk_SignedRequestAndItsAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       hooks.Decision
		reason     string
	}{
		{"approve", `{"decision":"approve"}`, hooks.Approve, ""},
		{"deny with reason", `{"decision":"deny","reason":"  not on Fridays "}`, hooks.Deny, "not on Fridays"},
		{"ask", `{"decision":"ask","reason":"a person should look"}`, hooks.Ask, "a person should look"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, seen := receiver(t, answer(tc.body))
			a := hooks.NewClient(nil).Ask(context.Background(), hooks.Endpoint{URL: srv.URL, Secret: secret}, sample())
			if a.Decision != tc.want || a.Reason != tc.reason || a.Error != "" || a.Status != 200 {
				t.Fatalf("answer = %+v, want %s %q", a, tc.want, tc.reason)
			}
			got := <-seen
			if got.Type != "approval.decide" || got.Tool != "get_forecast" || got.Server != "demo" || got.User.Email != "a@example.com" ||
				got.ApprovalRequestID != "mcpr_1" || got.ConversationID != "conv_1" || string(got.Arguments) != `{"city":"Test","api_key":"[redacted]"}` {
				t.Fatalf("the hook received %+v", got)
			}
		})
	}
}

func TestAsk_AWrongSecretIsRefusedByTheReceiverAndAsks(t *testing.T) {
	srv, _ := receiver(t, answer(`{"decision":"approve"}`))
	a := hooks.NewClient(nil).Ask(context.Background(), hooks.Endpoint{URL: srv.URL, Secret: "another"}, sample())
	if a.Decision != hooks.Ask || a.Status != 401 || !strings.Contains(a.Error, "401") {
		t.Fatalf("answer = %+v, want ask after 401", a)
	}
}

func TestAsk_FailuresAsk(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(http.ResponseWriter, hooks.Request)
		want  string
	}{
		{"500", func(w http.ResponseWriter, _ hooks.Request) {
			w.WriteHeader(500)
			_, _ = io.WriteString(w, `{"decision":"approve"}`)
		}, "answered 500"},
		{"not JSON", answer(`approve`), "not JSON"},
		{"no decision", answer(`{"reason":"x"}`), `no "decision"`},
		{"unknown decision", answer(`{"decision":"yes"}`), `"yes"`},
		{"too large", answer(`{"decision":"approve","reason":"` + strings.Repeat("x", 20<<10) + `"}`), "larger than"},
		{"redirect", func(w http.ResponseWriter, r hooks.Request) {
			w.Header().Set("Location", "http://127.0.0.1:1/elsewhere")
			w.WriteHeader(http.StatusTemporaryRedirect)
		}, "answered 307"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := receiver(t, tc.reply)
			a := hooks.NewClient(nil).Ask(context.Background(), hooks.Endpoint{URL: srv.URL, Secret: secret}, sample())
			if a.Decision != hooks.Ask || a.Reason != "" || !strings.Contains(a.Error, tc.want) {
				t.Fatalf("answer = %+v, want ask with an error containing %q", a, tc.want)
			}
		})
	}
}

func TestAsk_ASlowHookAsksAtItsTimeout(t *testing.T) {
	release := make(chan struct{})
	srv, _ := receiver(t, func(w http.ResponseWriter, _ hooks.Request) {
		<-release
		answer(`{"decision":"approve"}`)(w, hooks.Request{})
	})
	defer close(release)
	start := time.Now()
	a := hooks.NewClient(nil).Ask(context.Background(), hooks.Endpoint{URL: srv.URL, Secret: secret, Timeout: 200 * time.Millisecond}, sample())
	if a.Decision != hooks.Ask || !strings.Contains(a.Error, "within 200ms") {
		t.Fatalf("answer = %+v, want ask after the timeout", a)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Ask took %s with a 200ms timeout", d)
	}
}

func TestAsk_UnreachableAsks(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	a := hooks.NewClient(nil).Ask(context.Background(), hooks.Endpoint{URL: url, Secret: secret}, sample())
	if a.Decision != hooks.Ask || !strings.Contains(a.Error, "could not be reached") {
		t.Fatalf("answer = %+v", a)
	}
}

func TestVerify_RefusesTamperingAndOldTimestamps(t *testing.T) {
	now := time.Now()
	body := []byte(`{"a":1}`)
	h := hooks.Sign(secret, now, body)
	if err := hooks.Verify(secret, h, body, now, time.Minute); err != nil {
		t.Fatalf("a fresh signature: %v", err)
	}
	if err := hooks.Verify(secret, h, []byte(`{"a":2}`), now, time.Minute); err == nil {
		t.Fatal("a changed body verified")
	}
	if err := hooks.Verify(secret, h, body, now.Add(10*time.Minute), time.Minute); err == nil {
		t.Fatal("a ten-minute-old signature verified")
	}
	if err := hooks.Verify(secret, "v1=abc", body, now, time.Minute); err == nil {
		t.Fatal("a header without t verified")
	}
}
