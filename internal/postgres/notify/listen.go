// Package notify receives the notifications replicas send each other
// through Postgres (LISTEN/NOTIFY): settings changes, webhook wake-ups and
// the like, on one connection of its own.
package notify

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
	h    Handler
}

// Handler hears what a Listener receives.
type Handler interface {
	// Notified is called for each notification, one at a time.
	Notified(channel string, payload []byte)
	// Connected is called after every (re)connection: notifications sent
	// while it was away are lost, so whoever waits for them looks again.
	Connected()
	// Disconnected is called when a connection that Connected announced
	// is lost: until the next Connected, notifications go unheard.
	Disconnected()
}

// Funcs is a Handler of three functions (tests); a nil one is
// skipped.
type Funcs struct {
	Notify     func(channel string, payload []byte)
	Connect    func()
	Disconnect func()
}

// Notified calls f.Notify.
func (f Funcs) Notified(channel string, payload []byte) {
	if f.Notify != nil {
		f.Notify(channel, payload)
	}
}

// Connected calls f.Connect.
func (f Funcs) Connected() {
	if f.Connect != nil {
		f.Connect()
	}
}

// Disconnected calls f.Disconnect.
func (f Funcs) Disconnected() {
	if f.Disconnect != nil {
		f.Disconnect()
	}
}

// NewListener returns a listener on pool's database that tells h what it
// receives.
func NewListener(pool *pgxpool.Pool, log *slog.Logger, h Handler) *Listener {
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
	defer l.h.Disconnected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.h.Notified(n.Channel, []byte(n.Payload))
	}
}
