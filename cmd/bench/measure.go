package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/client"
)

// runResult is one run's figures, keyed "<variant>.<figure>".
type runResult map[string]float64

// measureRun measures every phase once, the variants taking turns within
// each phase (Toolgate, proxy, direct).
func measureRun(ctx context.Context, o options, m *mock, vs []*variant, users []*client.Client, stdout io.Writer) (runResult, error) {
	r := runResult{}
	fmt.Fprintf(stdout, "  first delta @ %v turns/s…\n", o.rates)
	if err := r.measureFirstDelta(ctx, o, vs); err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "  %s at %d turns/s…\n", o.queueFor, o.rate)
	if err := r.measureLongRound(ctx, o, vs); err != nil {
		return nil, err
	}
	if o.users > 0 {
		fmt.Fprintf(stdout, "  %d users…\n", o.users)
	}
	if err := r.measureManyUsers(ctx, o, vs, users); err != nil {
		return nil, err
	}
	if err := r.measureLevels(ctx, o, vs, stdout); err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "  approvals…\n")
	if err := r.measureApprovals(ctx, o, m, vs); err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "  Toolgate: first delta +%.2f ms p50 @ %d/s (queued: %v), event delay p99 %.2f ms @%d, approval %.2f ms p50\n",
		r["toolgate.ttfd_long_p50_ms"], o.rate, r["toolgate.queued_long"] == 1, r[fmt.Sprintf("toolgate.event_delay_p99_ms@%d", o.levels[0])], o.levels[0], r["toolgate.approval_p50_ms"])
	return r, nil
}

// settle lets the variant measured last calm down before the next.
func settle() { time.Sleep(300 * time.Millisecond) }

// measureLevels measures the per-event delay at each level of concurrent
// streams; CPU per event at the first level; Toolgate's memory at each.
func (r runResult) measureLevels(ctx context.Context, o options, vs []*variant, stdout io.Writer) error {
	deltas := max(1, int((o.ramp+o.hold)/o.gap))
	for li, n := range o.levels {
		fmt.Fprintf(stdout, "  %d streams…", n)
		for _, v := range vs {
			start := time.Now()
			if err := r.measureLevel(ctx, o, v, li, n, deltas); err != nil {
				return err
			}
			fmt.Fprintf(stdout, " %s %.1f s", v.name, time.Since(start).Seconds())
			settle()
		}
		fmt.Fprintln(stdout)
	}
	return nil
}

// measureLevel measures one variant at level li: n concurrent streams of
// deltas deltas each. The level was held when all n were open at once.
func (r runResult) measureLevel(ctx context.Context, o options, v *variant, li, n, deltas int) error {
	var cpu0 time.Duration
	rss0 := int64(0)
	if v.pid != 0 {
		cpu0, _ = cpuTime(v.pid)
		rss0 = rss(v.pid)
	}
	sampler := sampleRSS(v.pid, rss0)
	mid := startMidRound(ctx, v, o.ramp+o.hold/2)
	var mu sync.Mutex
	var delays []time.Duration
	var firstErr error
	var opened gauge
	openLoop(n, o.ramp/time.Duration(n), func(_ int, at time.Time) {
		s := v.streamAs(ctx, nil, at, deltas, &opened)
		mu.Lock()
		defer mu.Unlock()
		if s.err != nil && firstErr == nil {
			firstErr = s.err
		}
		delays = append(delays, s.delays...)
	})
	peak := sampler.end()
	if firstErr != nil {
		return fmt.Errorf("%d streams: %w", n, firstErr)
	}
	if err := mid.perStream(r, v.name, n); err != nil {
		return fmt.Errorf("%d streams: runtime figures: %w", n, err)
	}
	r[fmt.Sprintf("%s.event_delay_p99_ms@%d", v.name, n)] = ms(pct(delays, 99))
	r[fmt.Sprintf("%s.event_delay_p50_ms@%d", v.name, n)] = ms(pct(delays, 50))
	r[fmt.Sprintf("%s.peak_open@%d", v.name, n)] = float64(opened.peak())
	r[fmt.Sprintf("%s.held@%d", v.name, n)] = 0
	if opened.peak() >= n {
		r[fmt.Sprintf("%s.held@%d", v.name, n)] = 1
	}
	if v.pid != 0 {
		cpu1, _ := cpuTime(v.pid)
		if li == 0 {
			r[fmt.Sprintf("%s.cpu_per_event_us@%d", v.name, n)] = float64(cpu1-cpu0) / float64(time.Microsecond) / float64(len(delays))
		}
		r[fmt.Sprintf("%s.rss_peak_mb@%d", v.name, n)] = float64(peak) / (1 << 20)
		r[fmt.Sprintf("%s.rss_per_stream_kib@%d", v.name, n)] = float64(peak-rss0) / 1024 / float64(n)
	}
	return nil
}

// rssSampler reads a process's resident set every 50 ms, keeping the peak,
// until it is ended.
type rssSampler struct {
	peak    int64
	stop    chan struct{}
	sampled chan struct{}
}

// sampleRSS starts sampling pid (0: none; the peak stays rss0).
func sampleRSS(pid int, rss0 int64) *rssSampler {
	s := &rssSampler{peak: rss0, stop: make(chan struct{}), sampled: make(chan struct{})}
	go func() {
		defer close(s.sampled)
		if pid == 0 {
			return
		}
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.peak = max(s.peak, rss(pid))
			}
		}
	}()
	return s
}

// end stops the sampling and returns the peak.
func (s *rssSampler) end() int64 {
	close(s.stop)
	<-s.sampled
	return s.peak
}

// measureApprovals measures approval decision → follow-up at the mock,
// 10 a second.
func (r runResult) measureApprovals(ctx context.Context, o options, m *mock, vs []*variant) error {
	for _, v := range vs {
		var mu sync.Mutex
		var rts []time.Duration
		var firstErr error
		openLoop(o.approvals, 100*time.Millisecond, func(int, time.Time) {
			d, err := v.approval(ctx, m)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			rts = append(rts, d)
		})
		if firstErr != nil {
			return fmt.Errorf("approval: %w", firstErr)
		}
		r[v.name+".approval_p50_ms"] = ms(pct(rts, 50))
		r[v.name+".approval_p99_ms"] = ms(pct(rts, 99))
		settle()
	}
	return nil
}

// pct is the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// median is each figure's median over the runs.
func median(runs []runResult) map[string]float64 {
	out := map[string]float64{}
	for k := range runs[0] {
		var vs []float64
		for _, r := range runs {
			vs = append(vs, r[k])
		}
		slices.Sort(vs)
		out[k] = vs[len(vs)/2]
	}
	return out
}
