package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/policy"
)

// definitions keeps, per server, the tools it listed last and when, so that
// calls within DefinitionMaxAge share one listing and tools/list answers at
// once while a background listing refreshes them.
type definitions struct {
	upstream Upstream
	maxStale time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	servers map[string]*serverDefs // by label
}

type serverDefs struct {
	key      string // the URL and headers they were listed with
	tools    []policy.DiscoveredTool
	listedAt time.Time // when the listing that gave tools was sent
	flight   *listing  // the newest listing under way, if any
}

// listing is one tools/list sent to the real server.
type listing struct {
	started time.Time
	done    chan struct{}
	tools   []policy.DiscoveredTool
	err     error
}

func newDefinitions(u Upstream, maxStale time.Duration, log *slog.Logger) *definitions {
	return &definitions{upstream: u, maxStale: maxStale, log: log, servers: make(map[string]*serverDefs)}
}

// fresh returns the server's tools as listed at most maxAge ago (maxAge 0:
// listed now, for this caller), and when that listing was sent.
func (d *definitions) fresh(ctx context.Context, srv policy.Server, maxAge time.Duration) ([]policy.DiscoveredTool, time.Time, error) {
	now := time.Now()
	d.mu.Lock()
	sd := d.entryLocked(srv)
	if maxAge > 0 && sd.tools != nil && now.Sub(sd.listedAt) <= maxAge {
		tools, at := sd.tools, sd.listedAt
		d.mu.Unlock()
		return tools, at, nil
	}
	fl := sd.flight
	if fl == nil || maxAge == 0 || fl.started.Before(now.Add(-maxAge)) {
		fl = d.startLocked(srv, sd)
	}
	d.mu.Unlock()
	select {
	case <-fl.done:
		return fl.tools, fl.started, fl.err
	case <-ctx.Done():
		return nil, time.Time{}, context.Cause(ctx)
	}
}

// forList returns the tools a tools/list answers with: the last listing
// when it is at most maxStale old (refreshed in the background when older
// than maxAge), else a new one.
func (d *definitions) forList(ctx context.Context, srv policy.Server, maxAge time.Duration) ([]policy.DiscoveredTool, error) {
	now := time.Now()
	d.mu.Lock()
	sd := d.entryLocked(srv)
	if sd.tools != nil && now.Sub(sd.listedAt) <= d.maxStale {
		if now.Sub(sd.listedAt) > maxAge && sd.flight == nil {
			d.startLocked(srv, sd)
		}
		tools := sd.tools
		d.mu.Unlock()
		return tools, nil
	}
	d.mu.Unlock()
	tools, _, err := d.fresh(ctx, srv, d.maxStale)
	return tools, err
}

// entryLocked is the server's entry, emptied when the server's URL or
// headers changed since it was filled.
func (d *definitions) entryLocked(srv policy.Server) *serverDefs {
	key := serverKey(srv)
	sd, ok := d.servers[srv.Label]
	if !ok || sd.key != key {
		sd = &serverDefs{key: key}
		d.servers[srv.Label] = sd
	}
	return sd
}

// startLocked sends a listing. It runs detached from the caller that
// started it (others may wait for it); Upstream bounds it in time.
func (d *definitions) startLocked(srv policy.Server, sd *serverDefs) *listing {
	fl := &listing{started: time.Now(), done: make(chan struct{})}
	sd.flight = fl
	go func() {
		tools, err := d.upstream.ListTools(context.Background(), srv.URL, srv.Headers)
		d.mu.Lock()
		if err == nil && (sd.tools == nil || !fl.started.Before(sd.listedAt)) {
			sd.tools, sd.listedAt = slices.Clip(tools), fl.started
		}
		if sd.flight == fl {
			sd.flight = nil
		}
		d.mu.Unlock()
		if err != nil {
			d.log.Warn("mcp face: listing the server failed", "server", srv.Label, "error", err)
		}
		fl.tools, fl.err = tools, err
		close(fl.done)
	}()
	return fl
}

func serverKey(srv policy.Server) string {
	h := sha256.New()
	h.Write([]byte(srv.URL))
	keys := make([]string, 0, len(srv.Headers))
	for k := range srv.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "\x00%s\x00%s", k, srv.Headers[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}
