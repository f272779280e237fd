package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PoolStats is a snapshot of the database connection pool (cmd/api copies
// it from pgxpool.Stat, which only cmd/api may name).
type PoolStats struct {
	AcquiredConns        int32         // in use now
	IdleConns            int32         // open and idle now
	TotalConns           int32         // open now (acquired, idle and being opened)
	MaxConns             int32         // the pool's limit
	AcquireCount         int64         // acquires so far
	AcquireDuration      time.Duration // their total time
	EmptyAcquireCount    int64         // acquires that had to wait for a connection
	EmptyAcquireWaitTime time.Duration // the total time they waited
	CanceledAcquireCount int64         // acquires given up (context ended)
}

// WatchPool registers collectors that read stat on every scrape.
func (m *Metrics) WatchPool(stat func() PoolStats) {
	if m == nil {
		return
	}
	m.reg.MustRegister(poolCollector{stat: stat})
}

var (
	poolAcquired = prometheus.NewDesc("toolgate_db_pool_acquired_conns", "Database connections in use now.", nil, nil)
	poolIdle     = prometheus.NewDesc("toolgate_db_pool_idle_conns", "Database connections open and idle now.", nil, nil)
	poolTotal    = prometheus.NewDesc("toolgate_db_pool_total_conns", "Database connections open now (in use, idle and being opened).", nil, nil)
	poolMax      = prometheus.NewDesc("toolgate_db_pool_max_conns", "The most database connections the pool opens.", nil, nil)
	poolAcquires = prometheus.NewDesc("toolgate_db_pool_acquires_total", "Connections taken from the pool.", nil, nil)
	poolAcqTime  = prometheus.NewDesc("toolgate_db_pool_acquire_seconds_total", "Total time spent taking connections from the pool.", nil, nil)
	poolWaits    = prometheus.NewDesc("toolgate_db_pool_empty_acquires_total", "Acquires that found no idle connection and had to wait.", nil, nil)
	poolWaitTime = prometheus.NewDesc("toolgate_db_pool_acquire_wait_seconds_total", "Total time acquires waited for a connection because none was idle.", nil, nil)
	poolCanceled = prometheus.NewDesc("toolgate_db_pool_canceled_acquires_total", "Acquires given up because their request ended first.", nil, nil)
)

type poolCollector struct{ stat func() PoolStats }

func (poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolAcquired, poolIdle, poolTotal, poolMax, poolAcquires, poolAcqTime, poolWaits, poolWaitTime, poolCanceled} {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stat()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(poolAcquired, float64(s.AcquiredConns))
	gauge(poolIdle, float64(s.IdleConns))
	gauge(poolTotal, float64(s.TotalConns))
	gauge(poolMax, float64(s.MaxConns))
	counter(poolAcquires, float64(s.AcquireCount))
	counter(poolAcqTime, s.AcquireDuration.Seconds())
	counter(poolWaits, float64(s.EmptyAcquireCount))
	counter(poolWaitTime, s.EmptyAcquireWaitTime.Seconds())
	counter(poolCanceled, float64(s.CanceledAcquireCount))
}
