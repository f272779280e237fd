package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/config"
)

// healthcheck is `toolgate healthcheck`, the Dockerfile's HEALTHCHECK (the
// distroless image has no curl): GET /healthz from the server this
// environment configures (LISTEN_ADDR; on loopback when it listens on every
// interface). nil only for a 200. It reads LISTEN_ADDR alone, not the whole
// configuration, so that a check never fails on a setting serve does not
// need to answer /healthz.
func healthcheck(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	addr := cmp.Or(strings.TrimSpace(getenv("LISTEN_ADDR")), config.DefaultListenAddr)
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("LISTEN_ADDR must be host:port, e.g. 127.0.0.1:8080 (got %q)", addr)
	}
	if port == "0" {
		return fmt.Errorf("LISTEN_ADDR %s picks a free port at start: there is no fixed port to check", addr)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	url := "http://" + net.JoinHostPort(host, port) + "/healthz"
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: GET %s answered %s", url, res.Status)
	}
	_, err = fmt.Fprintln(stdout, "ok:", url)
	return err
}
