package main

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/metrics"
)

// newMetrics is the server's Prometheus registry, with the database pool
// read on every scrape (GET /metrics, docs/operations.md "Metrics").
func newMetrics(b buildInfo, pool *pgxpool.Pool) *metrics.Metrics {
	m := metrics.New(metrics.Build{Version: b.Version, Commit: b.Commit})
	m.WatchPool(func() metrics.PoolStats { return poolStats(pool.Stat()) })
	return m
}

func poolStats(s *pgxpool.Stat) metrics.PoolStats {
	return metrics.PoolStats{AcquiredConns: s.AcquiredConns(), IdleConns: s.IdleConns(), TotalConns: s.TotalConns(),
		MaxConns: s.MaxConns(), AcquireCount: s.AcquireCount(), AcquireDuration: s.AcquireDuration(),
		EmptyAcquireCount: s.EmptyAcquireCount(), EmptyAcquireWaitTime: s.EmptyAcquireWaitTime(),
		CanceledAcquireCount: s.CanceledAcquireCount()}
}
