// Package agentgate is the person's side of Toolgate's MCP face for any MCP
// client (gateway.NewAgentFace): who a personal API token is, the
// conversation (kind agent) that holds one MCP session's calls, and held
// calls: a call that needs a person becomes an approval request like a
// chat's and waits, in the client's open request, until it is decided.
package agentgate

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
	"github.com/toolgate/toolgate/internal/conversation/record"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/policy"
)

// Defaults of Options.
const (
	DefaultPoll          = 250 * time.Millisecond
	DefaultProgressEvery = 5 * time.Second
)

// People says whose a personal API token is (auth.SignIn).
type People interface {
	TokenUser(ctx context.Context, secret string) (auth.User, error)
}

// ServerList lists the registered servers (registry.Servers).
type ServerList interface {
	ListServers(ctx context.Context) ([]policy.Server, error)
}

// Poker wakes the streams on this replica that follow a conversation
// (eventlog.Hub); other replicas learn of new events from Postgres.
type Poker interface {
	Poke(conv string, deleted bool)
}

// Options configure the Service.
type Options struct {
	Keeper  *record.Keeper
	People  People
	Servers ServerList
	Poker   Poker // may be nil
	// HoldTimeout (MCP_HOLD_TIMEOUT) is how long a held call waits for a
	// decision before it is withdrawn; zero: gateway.DefaultHoldTimeout.
	HoldTimeout   time.Duration
	ProgressEvery time.Duration // zero: DefaultProgressEvery
	Poll          time.Duration // zero: DefaultPoll
	Now           func() time.Time
	Logger        *slog.Logger
}

// Service implements gateway.Agents and conversation.HeldDecider.
type Service struct {
	keeper   *record.Keeper
	store    conversation.Store
	policies conversation.Policies
	people   People
	servers  ServerList
	poker    Poker
	hold     time.Duration
	progress time.Duration
	poll     time.Duration
	now      func() time.Time
	log      *slog.Logger
}

var (
	_ gateway.Agents           = (*Service)(nil)
	_ conversation.HeldDecider = (*Service)(nil)
)

// New returns the Service.
func New(o Options) *Service {
	s := &Service{keeper: o.Keeper, store: o.Keeper.Store(), policies: o.Keeper.Policies(), people: o.People, servers: o.Servers,
		poker: o.Poker, hold: o.HoldTimeout, progress: o.ProgressEvery, poll: o.Poll, now: o.Now, log: o.Logger}
	if s.hold <= 0 {
		s.hold = gateway.DefaultHoldTimeout
	}
	if s.progress <= 0 {
		s.progress = DefaultProgressEvery
	}
	if s.poll <= 0 {
		s.poll = DefaultPoll
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Person checks a personal API token.
func (s *Service) Person(ctx context.Context, token string) (context.Context, string, error) {
	u, err := s.people.TokenUser(ctx, token)
	if err != nil {
		return ctx, "", err
	}
	return auth.WithUser(ctx, u), u.ID, nil
}

// Servers lists the registered servers.
func (s *Service) Servers(ctx context.Context) ([]policy.Server, error) {
	return s.servers.ListServers(ctx)
}

// sessionPrefix begins the id of an agent's session's conversation.
const sessionPrefix = "agt_"

// Session opens the conversation of an MCP session of the caller's client.
func (s *Service) Session(ctx context.Context, sessionID string, c gateway.Client) (string, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return "", err
	}
	title := strings.TrimSpace(c.Title)
	if title == "" {
		title = strings.TrimSpace(c.Name)
	}
	title = clip(title, 60) + " (MCP)"
	conv, err := s.store.Repo().Conversations.OpenAgent(ctx, u.ID, sessionPrefix+sessionID, title,
		conversation.ClientInfo{Name: clip(c.Name, 200), Title: clip(c.Title, 200), Version: clip(c.Version, 100)})
	if err != nil {
		return "", err
	}
	return conv.ID, nil
}

// clip cuts what a client says of itself to n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}

// event is one stored event.
func event(name string, data any) conversation.NewEvent { return eventlog.Encode(name, data) }

// poke wakes this replica's streams of conv.
func (s *Service) poke(conv string) {
	if s.poker != nil {
		s.poker.Poke(conv, false)
	}
}
