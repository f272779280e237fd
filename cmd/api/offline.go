package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/emulator"
	"github.com/toolgate/toolgate/internal/httpserve"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
)

// DemoLabel is the label the demo MCP server is registered under offline.
const DemoLabel = "demo"

// offline is what Toolgate runs in its own process when there is no API
// key: the OpenAI Responses emulator (unless OPENAI_BASE_URL points at one
// elsewhere) and the demo MCP server.
type offline struct {
	baseURL string // the emulator's /v1/ URL
	demoURL string // the demo's MCP endpoint, "" when OFFLINE_DEMO=false
	servers []*httpserve.Server
}

func startOffline(cfg config.Config, log *slog.Logger) (*offline, error) {
	o := &offline{baseURL: cfg.OpenAIBaseURL}
	if o.baseURL == "" {
		// The emulator's stored responses live next to the secrets key file,
		// so that pending approvals and conversations survive a restart.
		emu, err := emulator.New(emulator.Config{StateFile: emulatorStateFile(cfg), Logger: log.With("component", "emulator")})
		if err != nil {
			return nil, fmt.Errorf("start the emulator: %w", err)
		}
		addr, err := o.serve("EMULATOR_ADDR", cfg.EmulatorAddr, emu.Handler(), log)
		if err != nil {
			return nil, err
		}
		o.baseURL = "http://" + addr + "/v1/"
	}
	if cfg.OfflineDemo {
		demo := demomcp.New(demomcp.Options{Logger: log.With("component", "demo-mcp")})
		addr, err := o.serve("DEMO_MCP_ADDR", cfg.DemoMCPAddr, demo.Handler(), log)
		if err != nil {
			o.close(context.Background())
			return nil, err
		}
		o.demoURL = "http://" + dialable(addr) + "/mcp"
	}
	return o, nil
}

// emulatorStateFile is where the in-process emulator keeps its stored
// responses: in the offline data directory, beside SECRETS_KEY_FILE.
func emulatorStateFile(cfg config.Config) string {
	return filepath.Join(filepath.Dir(cfg.Secrets.KeyFile), "emulator-state.json")
}

func (o *offline) serve(key, addr string, h http.Handler, log *slog.Logger) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("offline mode: listen on %s=%s: %w (set %s to a free address, e.g. 127.0.0.1:0)", key, addr, err, key)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	o.servers = append(o.servers, httpserve.Start(srv, ln))
	return ln.Addr().String(), nil
}

// offlineShutdown bounds how long the offline helpers wait for their open
// requests at shutdown: Toolgate's own turns have ended by then.
const offlineShutdown = 5 * time.Second

// close shuts the helpers down; the connections Toolgate's clients dialed
// and never used are closed at once (httpserve), so they hold nothing.
func (o *offline) close(ctx context.Context) {
	for _, s := range o.servers {
		_ = s.Shutdown(ctx, offlineShutdown)
	}
}

// registerDemo makes sure the demo server is registered under DemoLabel at
// its current URL, so a fresh offline install has a server to chat with,
// with its read-only hints accepted: it is Toolgate's own code, run by
// this process, so what it says of its tools is not a stranger's claim.
func registerDemo(ctx context.Context, policies *policysvc.Service, url string) error {
	srv, err := policies.Servers.Server(ctx, DemoLabel)
	trusted := policy.HintsTrusted
	switch {
	case apperr.KindOf(err) == apperr.NotFound:
		if _, err = policies.Servers.CreateServer(ctx, policy.NewServer{Label: DemoLabel, URL: url,
			Description: "Toolgate's demo MCP server (offline mode): weather forecasts and alerts"}); err != nil {
			return err
		}
		_, err = policies.Servers.UpdateServer(ctx, DemoLabel, policy.ServerPatch{ReadOnlyHints: &trusted})
		return err
	case err != nil:
		return err
	case srv.URL != url:
		_, err = policies.Servers.UpdateServer(ctx, DemoLabel, policy.ServerPatch{URL: &url, ReadOnlyHints: &trusted})
		return err
	case srv.ReadOnlyHints != policy.HintsTrusted:
		_, err = policies.Servers.UpdateServer(ctx, DemoLabel, policy.ServerPatch{ReadOnlyHints: &trusted})
		return err
	}
	return nil
}

// dialable turns a listening address into one to connect to: 0.0.0.0 and
// :: are no server's address (the URL policy refuses them), loopback is.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err == nil && (host == "" || ip != nil && ip.IsUnspecified()) {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}
