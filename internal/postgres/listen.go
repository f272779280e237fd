package postgres

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Listener receives the notifications every replica sends through
// Postgres (LISTEN/NOTIFY) on one connection of its own, reconnecting with
// backoff when it breaks.
type Listener struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	h    ListenHandler
}

// ListenHandler hears what a Listener receives.
type ListenHandler interface {
	// Notified is called for each notification, one at a time.
	Notified(channel string, payload []byte)
	// Connected is called after every (re)connection: notifications sent
	// while it was away are lost, so whoever waits for them looks again.
	Connected()
}

// ListenFuncs is a ListenHandler of two functions (tests); a nil one is
// skipped.
type ListenFuncs struct {
	Notify  func(channel string, payload []byte)
	Connect func()
}

// Notified calls f.Notify.
func (f ListenFuncs) Notified(channel string, payload []byte) {
	if f.Notify != nil {
		f.Notify(channel, payload)
	}
}

// Connected calls f.Connect.
func (f ListenFuncs) Connected() {
	if f.Connect != nil {
		f.Connect()
	}
}

// NewListener returns a listener on pool's database that tells h what it
// receives.
func NewListener(pool *pgxpool.Pool, log *slog.Logger, h ListenHandler) *Listener {
	return &Listener{pool: pool, log: log, h: h}
}

// Run listens on channels until ctx ends.
func (l *Listener) Run(ctx context.Context, channels ...string) {
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listen(ctx, channels)
		if ctx.Err() != nil {
			return
		}
		l.log.WarnContext(ctx, "the notification listener lost its connection; reconnecting", "error", err, "in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

func (l *Listener) listen(ctx context.Context, channels []string) error {
	conn, err := pgx.ConnectConfig(ctx, l.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	l.h.Connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.h.Notified(n.Channel, []byte(n.Payload))
	}
}
