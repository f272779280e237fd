package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/client"
)

// variant is one way to reach the mock: directly, through the plain proxy,
// or through Toolgate.
type variant struct {
	name   string
	base   string
	tg     *client.Client // Toolgate's client, signed in; nil for the baselines
	pid    int            // the process measured for CPU and memory; 0: none
	client *http.Client
	mockL  *listener // the mock's address this variant's upstream calls reach
	// metrics reads the Go runtime's figures of Toolgate (nil: a baseline).
	metrics func(context.Context) (map[string]float64, error)
}

func newClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 2048, 2048
	return &http.Client{Transport: tr, Timeout: 5 * time.Minute}
}

// newToolgateClient is a client of the Toolgate at base with the bench's
// connection pool and timeout (and the client's cookie jar).
func newToolgateClient(base string) (*client.Client, error) {
	c, err := client.New(base, "")
	if err != nil {
		return nil, err
	}
	h := newClient()
	c.HTTP.Transport, c.HTTP.Timeout = h.Transport, h.Timeout
	return c, nil
}

func (v *variant) toolgate() bool { return v.tg != nil }

// post sends an OpenAI Responses request to a baseline.
func (v *variant) post(ctx context.Context, path, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.base+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := v.client.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return nil, fmt.Errorf("%s %s: %d %s", v.name, path, res.StatusCode, bytes.TrimSpace(b))
	}
	return res, nil
}

// message starts a turn asking the mock for text and returns its stream:
// through Toolgate as the user signed in with as (nil: the admin).
func (v *variant) message(ctx context.Context, as *client.Client, text string) (*client.Stream, error) {
	if v.toolgate() {
		if as == nil {
			as = v.tg
		}
		s, err := as.Send(ctx, client.MessageRequest{Input: text})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.name, err)
		}
		return s, nil
	}
	res, err := v.post(ctx, "/v1/responses", fmt.Sprintf(`{"model":"gpt-5-mini","input":%q,"stream":true}`, text))
	if err != nil {
		return nil, err
	}
	return &client.Stream{Reader: client.NewReader(res.Body), Response: res}, nil
}

// streamResult is what one stream measured.
type streamResult struct {
	addedFirst time.Duration   // time to first delta minus the mock's own part of it
	delays     []time.Duration // per delta: received minus sent by the mock
	toUpstream time.Duration   // from the start to the request reaching the mock
	headers    time.Duration   // from the start to the stream's headers at the client
	err        error
}

// stream runs one turn of n deltas, started (on the schedule) at start.
func (v *variant) stream(ctx context.Context, start time.Time, n int) streamResult {
	return v.streamAs(ctx, nil, start, n, nil)
}

// streamAs is stream as the user signed in with as (nil: the admin);
// opened, when not nil, counts the streams open at once.
func (v *variant) streamAs(ctx context.Context, as *client.Client, start time.Time, n int, opened *gauge) streamResult {
	s, err := v.message(ctx, as, fmt.Sprintf("bench deltas=%d", n))
	if err != nil {
		return streamResult{err: err}
	}
	defer s.Close()
	r := streamResult{headers: time.Since(start)}
	if opened != nil {
		opened.add(1)
		defer opened.add(-1)
	}
	r.delays = make([]time.Duration, 0, n)
	for ev, err := range s.All() {
		if err != nil {
			break
		}
		now := time.Now()
		_, d, ok := bytes.Cut(ev.Data, []byte(`"delta":"`))
		for ok && len(d) > 0 && d[0] >= '0' && d[0] <= '9' {
			var sent, arrived int64
			sent, arrived, d, ok = parseStamp(d)
			if !ok {
				break
			}
			if len(r.delays) == 0 {
				r.addedFirst = now.Sub(start) - time.Duration(sent-arrived)
				r.toUpstream = time.Unix(0, arrived).Sub(start)
			}
			r.delays = append(r.delays, now.Sub(time.Unix(0, sent)))
		}
	}
	if len(r.delays) != n {
		r.err = fmt.Errorf("%s: got %d of %d deltas", v.name, len(r.delays), n)
	}
	return r
}

// parseStamp reads "<sent>.<arrived> " from the front of d.
func parseStamp(d []byte) (sent, arrived int64, rest []byte, ok bool) {
	dot := bytes.IndexByte(d, '.')
	sp := bytes.IndexByte(d, ' ')
	if dot < 0 || sp < dot {
		return 0, 0, nil, false
	}
	s, err1 := strconv.ParseInt(string(d[:dot]), 10, 64)
	a, err2 := strconv.ParseInt(string(d[dot+1:sp]), 10, 64)
	return s, a, d[sp+1:], err1 == nil && err2 == nil
}

// openLoop starts count jobs every interval, each at its scheduled time
// whether or not the earlier ones finished, and waits for all.
func openLoop(count int, interval time.Duration, job func(i int, scheduled time.Time)) {
	var wg sync.WaitGroup
	start := time.Now()
	for i := range count {
		at := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(at))
		wg.Add(1)
		go func() { defer wg.Done(); job(i, at) }()
	}
	wg.Wait()
}

// approval measures one decision → follow-up: through Toolgate, a turn
// that ends at approval.required, then the decision posted and timed
// until the follow-up reaches the mock; for the baselines, the follow-up
// request itself posted and timed the same way.
func (v *variant) approval(ctx context.Context, m *mock) (time.Duration, error) {
	if !v.toolgate() {
		id := "mcpr_base" + randHex(8)
		arrived := m.expect(id)
		start := time.Now()
		res, err := v.post(ctx, "/v1/responses", `{"model":"gpt-5-mini","stream":true,"input":[{"type":"mcp_approval_response","approval_request_id":"`+id+`","approve":true}]}`)
		if err != nil {
			return 0, err
		}
		defer res.Body.Close()
		return wait(arrived, start)
	}
	s, err := v.message(ctx, nil, "bench approve")
	if err != nil {
		return 0, err
	}
	id, err := approvalRequested(s)
	if err != nil {
		return 0, err
	}
	arrived := m.expect(id)
	start := time.Now()
	s, err = v.tg.Decide(ctx, client.DecisionsRequest{ConversationID: s.ConversationID,
		Decisions: []client.Decision{{ApprovalRequestID: id, Approve: true}}})
	if err != nil {
		return 0, err
	}
	defer func() { _, _ = io.Copy(io.Discard, s.Response.Body); s.Close() }()
	return wait(arrived, start)
}

// approvalRequested reads a turn's stream to its end and returns the id of
// the approval request it asked.
func approvalRequested(s *client.Stream) (string, error) {
	defer s.Close()
	var id string
	var names []string
	for ev, err := range s.All() {
		if err != nil {
			return "", fmt.Errorf("toolgate: %w after %v", err, names)
		}
		names = append(names, ev.Name)
		if ev.Name == "approval.required" {
			var a struct {
				ID string `json:"approval_request_id"`
			}
			if json.Unmarshal(ev.Data, &a) == nil {
				id = a.ID
			}
		}
	}
	if id == "" || s.ConversationID == "" {
		return "", fmt.Errorf("toolgate: no approval.required (conversation %q) in %v", s.ConversationID, names)
	}
	return id, nil
}

// gauge counts streams open at once and keeps the most.
type gauge struct {
	mu        sync.Mutex
	open, top int
}

func (g *gauge) add(d int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open += d
	g.top = max(g.top, g.open)
}

func (g *gauge) peak() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.top
}

func wait(arrived chan time.Time, start time.Time) (time.Duration, error) {
	select {
	case at := <-arrived:
		return at.Sub(start), nil
	case <-time.After(30 * time.Second):
		return 0, fmt.Errorf("the follow-up never reached the mock")
	}
}
