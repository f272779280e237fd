package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/secrets"
)

// useSecrets sets the key that encrypts header secrets: SECRETS_KEY, or
// offline without it the key file (created on first run). It encrypts
// values still stored in plain text and fails when the key does not open
// what is stored, before anything reads a server. It returns the box, whose
// derived keys sign other secrets (capability tokens).
func useSecrets(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, log *slog.Logger) (*secrets.Box, error) {
	key := cfg.Secrets.Key
	if key == nil { // config.Load refuses this online
		k, created, err := secrets.LoadOrCreateKeyFile(cfg.Secrets.KeyFile)
		if err != nil {
			return nil, err
		}
		if created {
			log.Warn("created a key for the MCP servers' header secrets; a real deployment sets SECRETS_KEY instead ("+secrets.GenerateHint+")",
				"file", cfg.Secrets.KeyFile)
		}
		key = k
	}
	box, err := secrets.New(key)
	if err != nil {
		return nil, err
	}
	n, err := postgres.SealHeaders(ctx, pool, box)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		log.Info("encrypted the header and URL secrets of MCP servers stored before encryption", "servers", n)
	}
	postgres.UseSecrets(box)
	return box, nil
}

// newURLGuard is the URL policy of discovery: offline, loopback is allowed
// (the demo MCP server runs there).
func newURLGuard(cfg config.Config) (*netguard.Guard, error) {
	g, err := netguard.New(netguard.Config{AllowedHosts: cfg.MCPNet.AllowedHosts, AllowPrivate: cfg.MCPNet.AllowPrivate, AllowLoopback: cfg.Offline()})
	if err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	return g, nil
}
