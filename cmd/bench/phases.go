package main

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/internal/client"
)

// turnRound starts count turns of 3 deltas, one every interval, open-loop;
// the i-th as the user who(i) (who nil, or a nil user: the admin; the
// baselines have no users). Results are in the order of the schedule.
func turnRound(ctx context.Context, v *variant, count int, interval time.Duration, who func(int) *client.Client) ([]streamResult, error) {
	res := make([]streamResult, count)
	openLoop(count, interval, func(i int, at time.Time) {
		var as *client.Client
		if who != nil {
			as = who(i)
		}
		res[i] = v.streamAs(ctx, as, at, 3, nil)
	})
	for _, r := range res {
		if r.err != nil {
			return nil, r.err
		}
	}
	return res, nil
}

// firsts is each turn's added time to first delta; headers each one's time
// to the stream's headers.
func firsts(res []streamResult) (firsts, headers []time.Duration) {
	for _, r := range res {
		firsts, headers = append(firsts, r.addedFirst), append(headers, r.headers)
	}
	return firsts, headers
}

// measureFirstDelta measures the added time to first text delta with turns
// of one user arriving at each of o.rates a second for o.ttfdFor (at least
// 20 turns), every variant.
func (r runResult) measureFirstDelta(ctx context.Context, o options, vs []*variant) error {
	for _, rate := range o.rates {
		count := max(20, int(o.ttfdFor.Seconds()*float64(rate)))
		for _, v := range vs {
			res, err := turnRound(ctx, v, count, time.Second/time.Duration(rate), nil)
			if err != nil {
				return fmt.Errorf("time to first delta @ %d turns/s: %w", rate, err)
			}
			f, _ := firsts(res)
			r[fmt.Sprintf("%s.ttfd_added_p50_ms@%d", v.name, rate)] = ms(pct(f, 50))
			r[fmt.Sprintf("%s.ttfd_added_p99_ms@%d", v.name, rate)] = ms(pct(f, 99))
			settle()
		}
	}
	return nil
}

// measureLongRound runs turns of one user at o.rate a second for
// o.queueFor (Toolgate and the proxy): the added time to first delta, the
// time to the stream's headers, and whether turn starts queued: the time
// to headers of the round's last fifth (median) more than that of its
// first fifth plus the larger of 5 ms and itself.
func (r runResult) measureLongRound(ctx context.Context, o options, vs []*variant) error {
	count := int(o.queueFor.Seconds() * float64(o.rate))
	for _, v := range vs {
		if v.name == "direct" {
			continue
		}
		res, err := turnRound(ctx, v, count, time.Second/time.Duration(o.rate), nil)
		if err != nil {
			return fmt.Errorf("%s at %d turns/s: %w", o.queueFor, o.rate, err)
		}
		f, h := firsts(res)
		r[v.name+".ttfd_long_p50_ms"] = ms(pct(f, 50))
		r[v.name+".ttfd_long_p99_ms"] = ms(pct(f, 99))
		r[v.name+".headers_long_p50_ms"] = ms(pct(h, 50))
		r[v.name+".headers_long_p99_ms"] = ms(pct(h, 99))
		growth, q := queued(h)
		r[v.name+".headers_growth_ms"] = ms(growth)
		r[v.name+".queued_long"] = 0
		if q {
			r[v.name+".queued_long"] = 1
		}
		settle()
	}
	return nil
}

// queued compares the time to headers of the first and the last fifth of
// a round (in the order of the schedule): growth is the difference of
// their medians, and the round queued when it exceeds the larger of 5 ms
// and the first fifth's median.
func queued(headers []time.Duration) (growth time.Duration, q bool) {
	n := max(1, len(headers)/5)
	first, last := pct(headers[:n], 50), pct(headers[len(headers)-n:], 50)
	growth = last - first
	return growth, growth > max(5*time.Millisecond, first)
}

// measureManyUsers runs o.users users at o.userRate turns a second each for
// o.ttfdFor, their turns spread evenly (Toolgate and the proxy; the proxy
// sees the same requests at the same times).
func (r runResult) measureManyUsers(ctx context.Context, o options, vs []*variant, users []*client.Client) error {
	if o.users == 0 {
		return nil
	}
	perSecond := float64(o.users) * o.userRate
	count := max(o.users, int(o.ttfdFor.Seconds()*perSecond))
	for _, v := range vs {
		if v.name == "direct" {
			continue
		}
		res, err := turnRound(ctx, v, count, time.Duration(float64(time.Second)/perSecond), func(i int) *client.Client {
			if len(users) == 0 {
				return nil
			}
			return users[i%len(users)]
		})
		if err != nil {
			return fmt.Errorf("%d users: %w", o.users, err)
		}
		f, h := firsts(res)
		r[v.name+".ttfd_many_p50_ms"] = ms(pct(f, 50))
		r[v.name+".ttfd_many_p99_ms"] = ms(pct(f, 99))
		r[v.name+".headers_many_p99_ms"] = ms(pct(h, 99))
		settle()
	}
	return nil
}
