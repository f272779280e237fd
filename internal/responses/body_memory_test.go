package responses

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
)

// An open stream does not keep the request it was opened with (~2.4 MB at
// 1,000 servers × 100 tools): what closing held streams gives back is a
// small part of it.
func TestStream_DoesNotKeepTheRequestBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+`{"type":"response.created","response":{"id":"resp_1"}}`+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // until the stream is closed
	}))
	t.Cleanup(srv.Close)
	c := New(Config{BaseURL: srv.URL + "/v1/", APIKey: "sk", Model: "gpt-5", MaxTools: 100000})
	req := scaleRequest() // the groups, as the turn keeps them
	body, _, err := c.body(req)
	if err != nil {
		t.Fatal(err)
	}
	const streams = 4
	var held []conversation.EventStream
	for range streams {
		s, err := c.Stream(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, s)
	}
	time.Sleep(50 * time.Millisecond) // the transport is done sending
	open := heapInUse()
	for _, s := range held {
		_ = s.Close()
	}
	time.Sleep(100 * time.Millisecond) // the connections' goroutines end
	perStream := (int64(open) - int64(heapInUse())) / streams
	t.Logf("an open stream holds %d bytes (the request body is %d)", perStream, len(body))
	if perStream > int64(len(body))/8 {
		t.Errorf("an open stream holds %d bytes: the request body (%d bytes) is kept", perStream, len(body))
	}
	runtime.KeepAlive(req)
	runtime.KeepAlive(c) // and its cache of rendered entries
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// The body the transport gets again (GetBody: a request it must send
// again, a redirect) is the same bytes, built again; the one sent lets go
// of its bytes once read, or closed.
func TestLetGo_SendsTheBodyAndBuildsItAgain(t *testing.T) {
	c := New(Config{BaseURL: "http://127.0.0.1:1/v1/", APIKey: "sk", Model: "gpt-5", MaxTools: 100000})
	req := conversation.UpstreamRequest{UserText: "hi", Tools: scaleGroups(50, 10)}
	p, _, err := c.bodyAt(req, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	body := p.bytes()
	mw := letGo(p, func() (pieces, error) { b, _, err := c.bodyAt(req, time.Now()); return b, err })
	r, _ := http.NewRequest("POST", "http://127.0.0.1:1/v1/responses", nil)
	_, _ = mw(r, func(r *http.Request) (*http.Response, error) {
		sent, err := io.ReadAll(r.Body)
		if err != nil || string(sent) != string(body) {
			t.Errorf("sent %d bytes (%v), want the body's %d", len(sent), err, len(body))
		}
		if sb := r.Body.(*sentBody); sb.held() != 0 {
			t.Error("the body sent still holds its bytes")
		}
		for range 2 {
			again, err := r.GetBody()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(io.LimitReader(again, 10))
			_ = again.Close()
			if string(b) != string(body[:10]) || again.(*sentBody).held() != 0 {
				t.Errorf("GetBody: %q, closed holding %d bytes", b, again.(*sentBody).held())
			}
			again, _ = r.GetBody()
			if b, _ := io.ReadAll(again); string(b) != string(body) {
				t.Error("GetBody gives other bytes than the body sent")
			}
		}
		return nil, io.EOF
	})
}

// A retried request sends the whole body again.
func TestStream_RetrySendsTheWholeBodyAgain(t *testing.T) {
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, b)
		if len(bodies) == 1 {
			w.Header().Set("Retry-After-Ms", "1")
			http.Error(w, `{"error":{"message":"busy","type":"server_error"}}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+`{"type":"response.completed","response":{"id":"resp_1"}}`+"\n\n")
	}))
	t.Cleanup(srv.Close)
	c := New(Config{BaseURL: srv.URL + "/v1/", APIKey: "sk", Model: "gpt-5", MaxTools: 100000, MaxRetries: 2})
	req := conversation.UpstreamRequest{UserText: "hi", Tools: scaleGroups(100, 10), Retry: true}
	s, err := c.Stream(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	want, _, _ := c.body(req)
	if len(bodies) != 2 || string(bodies[0]) != string(want) || string(bodies[1]) != string(want) {
		t.Errorf("%d attempts, bodies of %v bytes, want 2 of %d", len(bodies), []int{len(bodies[0]), len(bodies[len(bodies)-1])}, len(want))
	}
}
