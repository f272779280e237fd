package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// goFigures are the Go runtime's figures of Toolgate's /metrics that tell
// what a stream costs besides its heap: goroutine stacks, goroutines. (The
// heap's figures there count garbage, which depends on when the last
// collection ran: TestRun_OpenPOSTStreamsCostLittleAndLeaveNothingBehind
// measures the heap per stream after collections.)
var goFigures = []string{"go_memstats_stack_inuse_bytes", "go_goroutines"}

// runtimeFigures reads goFigures from the /metrics of the Toolgate at base.
func runtimeFigures(ctx context.Context, c *http.Client, base, token string) (map[string]float64, error) {
	return metricFigures(ctx, c, base, token, goFigures)
}

// metricFigures reads the named unlabelled samples from the /metrics of
// the Toolgate at base.
func metricFigures(ctx context.Context, c *http.Client, base, token string, names []string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", res.Status)
	}
	return parseFigures(bufio.NewScanner(res.Body), names)
}

// parseFigures reads the named unlabelled samples of the Prometheus text
// format.
func parseFigures(sc *bufio.Scanner, names []string) (map[string]float64, error) {
	out := map[string]float64{}
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		for _, n := range names {
			if name == n {
				v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				out[name] = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("/metrics has no %s", n)
		}
	}
	return out, nil
}

// midRound reads Toolgate's runtime figures before a round and again at
// its middle (after at), when every stream of the round should be open.
type midRound struct {
	before, mid map[string]float64
	err         error
	done        chan struct{}
}

func startMidRound(ctx context.Context, v *variant, at time.Duration) *midRound {
	m := &midRound{done: make(chan struct{})}
	if v.metrics == nil {
		close(m.done)
		return m
	}
	m.before, m.err = v.metrics(ctx)
	go func() {
		defer close(m.done)
		time.Sleep(at)
		if m.err == nil {
			m.mid, m.err = v.metrics(ctx)
		}
	}()
	return m
}

// perStream records, per stream of n, what the runtime's figures grew by.
func (m *midRound) perStream(r runResult, who string, n int) error {
	<-m.done
	if m.before == nil || m.err != nil {
		return m.err
	}
	grew := func(k string) float64 { return (m.mid[k] - m.before[k]) / float64(n) }
	r[fmt.Sprintf("%s.stacks_per_stream_kib@%d", who, n)] = grew("go_memstats_stack_inuse_bytes") / 1024
	r[fmt.Sprintf("%s.goroutines_per_stream@%d", who, n)] = grew("go_goroutines")
	return nil
}
