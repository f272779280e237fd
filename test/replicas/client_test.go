package replicas_test

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

	sse "github.com/toolgate/toolgate/internal/client"
)

// client talks to Toolgate through the proxy with a personal API token, as
// a script would, and counts the streams each replica is serving.
type client struct {
	base, token string
	hc          *http.Client

	mu       sync.Mutex
	inflight map[string]int // replica name -> chat streams open on it
}

func newClient(base, token string) *client {
	return &client{base: base, token: token, hc: &http.Client{}, inflight: map[string]int{}}
}

func (c *client) request(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.hc.Do(req)
}

// call sends a plain JSON request (10 s at most) and decodes a 2xx answer
// into out.
func (c *client) call(ctx context.Context, method, path string, body, out any) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := c.request(ctx, method, path, body)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, raw, err
	}
	if out != nil && res.StatusCode/100 == 2 {
		if err := json.Unmarshal(raw, out); err != nil {
			return res.StatusCode, raw, fmt.Errorf("decode %s %s: %w", method, path, err)
		}
	}
	return res.StatusCode, raw, nil
}

// must is call that fails unless the answer is 2xx; 502/503 from the proxy
// (no replica reachable for a moment) are tried again.
func (c *client) must(ctx context.Context, method, path string, body, out any) error {
	for attempt := 0; ; attempt++ {
		st, raw, err := c.call(ctx, method, path, body, out)
		if err == nil && st/100 == 2 {
			return nil
		}
		if (err != nil || st == http.StatusBadGateway || st == http.StatusServiceUnavailable) && attempt < 20 && ctx.Err() == nil {
			time.Sleep(250 * time.Millisecond)
			continue
		}
		return fmt.Errorf("%s %s: %d %s %v", method, path, st, raw, err)
	}
}

type sseEvent struct{ name, data string }

// streamResult is one chat POST and its event stream.
type streamResult struct {
	status  int    // 0: no answer at all
	body    []byte // of a non-200 answer
	code    string // error.code of a non-200 JSON answer
	replica string // X-Toolgate-Replica, set by the proxy
	events  []sseEvent
	// terminal is the name of the terminal event (completed, failed,
	// error); empty when the stream ended without one: it was cut.
	terminal string
	stalled  bool // the stream was still open when its time limit ran out
	err      error
	ended    time.Time
}

func (r streamResult) cut() bool { return r.status == http.StatusOK && r.terminal == "" }

// last returns the data of the last event called name, or "".
func (r streamResult) last(name string) string {
	for i := len(r.events) - 1; i >= 0; i-- {
		if r.events[i].name == name {
			return r.events[i].data
		}
	}
	return ""
}

// stream POSTs body to a chat route and reads the event stream to its end
// (at most limit).
func (c *client) stream(parent context.Context, path string, body any, limit time.Duration) (out streamResult) {
	ctx, cancel := context.WithTimeout(parent, limit)
	defer cancel()
	defer func() {
		out.ended = time.Now()
		out.stalled = out.terminal == "" && ctx.Err() != nil && parent.Err() == nil
	}()
	res, err := c.request(ctx, http.MethodPost, path, body)
	if err != nil {
		out.err = err
		return out
	}
	defer res.Body.Close()
	out.status, out.replica = res.StatusCode, res.Header.Get("X-Toolgate-Replica")
	if res.StatusCode != http.StatusOK {
		out.body, _ = io.ReadAll(res.Body)
		var e struct{ Error struct{ Code string } }
		_ = json.Unmarshal(out.body, &e)
		out.code = e.Error.Code
		return out
	}
	c.track(out.replica, 1)
	defer c.track(out.replica, -1)
	for ev, err := range sse.ReadEvents(res.Body) {
		if err != nil {
			if !errors.Is(err, io.ErrUnexpectedEOF) { // a cut mid-event is a cut: no terminal event
				out.err = err
			}
			return out
		}
		out.events = append(out.events, sseEvent{name: ev.Name, data: string(ev.Data)})
		switch ev.Name {
		case "completed", "failed", "error":
			out.terminal = ev.Name
			return out
		}
	}
	return out
}

func (c *client) track(replica string, d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight[replica] += d
}

// busy reports how many chat streams replica is serving now.
func (c *client) busy(replica string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight[replica]
}

// transcript is GET /api/conversations/{id}, the parts this test reads.
type transcript struct {
	Conversation struct {
		ID             string  `json:"id"`
		Streaming      bool    `json:"streaming"`
		LastResponseID *string `json:"last_response_id"`
	} `json:"conversation"`
	Items   []item     `json:"items"`
	Pending []approval `json:"pending_approvals"`
}

type item struct {
	Type              string          `json:"type"`
	ID                string          `json:"id"`
	ResponseID        string          `json:"response_id"`
	Text              string          `json:"text"`
	Name              string          `json:"name"`
	Arguments         json.RawMessage `json:"arguments"`
	Output            *string         `json:"output"`
	Error             json.RawMessage `json:"error"`
	ApprovalRequestID string          `json:"approval_request_id"`
	Interrupted       bool            `json:"interrupted"`
	Approval          *approval       `json:"approval"`
	TurnError         *struct {
		Code string `json:"code"`
	} `json:"turn_error"`
}

type approval struct {
	ID         string          `json:"approval_request_id"`
	ToolName   string          `json:"tool_name"`
	Arguments  json.RawMessage `json:"arguments"`
	State      string          `json:"state"`
	AnsweredIn *string         `json:"answered_in"`
	Reason     *string         `json:"reason"`
	// Call is the MCP face's record of the call it let run (gateway).
	Call *struct {
		State string `json:"state"`
	} `json:"call"`
}

func (c *client) transcript(ctx context.Context, id string) (transcript, error) {
	var tr transcript
	err := c.must(ctx, http.MethodGet, "/api/conversations/"+id, nil, &tr)
	return tr, err
}
