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
	// On is called for each notification, one at a time.
	On func(channel string, payload []byte)
	// OnConnect is called after every (re)connection: notifications sent
	// while it was away are lost, so whoever waits for them looks again.
	OnConnect func()
}

// NewListener returns a listener on pool's database.
func NewListener(pool *pgxpool.Pool, log *slog.Logger) *Listener {
	return &Listener{pool: pool, log: log}
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
	if l.OnConnect != nil {
		l.OnConnect()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if l.On != nil {
			l.On(n.Channel, []byte(n.Payload))
		}
	}
}
