package engine_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/conversation"
)

// A replica streams text deltas before it stores them; when it dies with
// some streamed and never stored, the replica that takes the turn over
// numbers its events past every id the dead one may have given: a client
// that resumes from the last delta it got (Last-Event-ID, on the live
// replica) gets the takeover's events — the message as stored, partial,
// and the interrupted error — and never a new event under an id it has.
func TestTakeover_ResumingAfterDeltasThatWereNeverStoredGetsTheTakeoversEvents(t *testing.T) {
	e := newEngine(t, engineOptions{})
	e.up.setBehavior("event-delay=5ms; deltas=100; stall=60s; at=60")
	ctx := as(t.Context(), ana)

	// The dying replica reaches Postgres through a link the test cuts.
	link := newCutter(t, e.pool.Config().ConnConfig.Host, e.pool.Config().ConnConfig.Port)
	cfg := e.pool.Config().Copy()
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = "127.0.0.1", link.port
	cfg.ConnConfig.RuntimeParams["application_name"] = "rep_dead"
	deadPool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer deadPool.Close()
	dead := e.replicaOn("rep_dead", deadPool)
	dead.SetReplica("rep_dead", time.Second)
	turn, err := dead.StartMessage(ctx, "", "hello")
	if err != nil {
		t.Fatal(err)
	}
	conv := turn.ConversationID()
	sub := dead.Follow(turn)
	defer sub.Close()
	go turn.Run(ctx, nil)

	// Some deltas stored, then the store locked: the next ones are
	// streamed only, and the replica dies with them.
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got []conversation.StoredEvent
	deltas := func() int {
		n := 0
		for _, ev := range got {
			if ev.Name == conversation.EventNameTextDelta {
				n++
			}
		}
		return n
	}
	read := func(until int) {
		for deltas() < until {
			evs, err := sub.Next(wait)
			if err != nil {
				t.Fatalf("the dying replica's stream after %s: %v", summary(got), err)
			}
			got = append(got, evs...)
		}
	}
	read(5)
	// The writer stores deltas behind the streams (it lingers for more):
	// wait until some are stored before locking the store.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var n int
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM conversation_events WHERE conversation_id = $1 AND event = 'text.delta'`, conv).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no delta was stored within 10 s")
		}
	}
	lock, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(ctx, `SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE`, conv); err != nil {
		t.Fatal(err)
	}
	read(deltas() + 10)
	var stored int64
	if err := e.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM conversation_events WHERE conversation_id = $1`, conv).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	lastSeen := got[len(got)-1].ID
	if lastSeen <= stored {
		t.Fatalf("the stream got up to %d with the log at %d; want deltas streamed and not stored", lastSeen, stored)
	}
	// The replica dies: nothing more of it reaches Postgres, and its
	// write waiting for the lock dies with its connection.
	link.cut()
	if _, err := e.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'rep_dead'`); err != nil {
		t.Fatal(err)
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// The live replica's sweep closes the turn once the lease ran out.
	alive := e.replica("rep_alive")
	alive.SetReplica("", time.Second)
	jctx, stop := context.WithCancel(context.Background())
	defer stop()
	e.janitor(alive).Start(jctx)

	resumed, err := alive.Events(ctx, conv, lastSeen)
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	var after []conversation.StoredEvent
	for len(after) == 0 || after[len(after)-1].Name != conversation.EventNameError {
		evs, err := resumed.Next(wait)
		if err != nil {
			t.Fatalf("resuming after %d on the live replica: %v after %s", lastSeen, err, summary(after))
		}
		after = append(after, evs...)
	}
	var partial *conversation.Item
	for _, ev := range after {
		if ev.ID <= lastSeen {
			t.Fatalf("resumed after %d and got event %d: an id the client had", lastSeen, ev.ID)
		}
		var it conversation.ItemEvent
		if ev.Name == conversation.EventNameItem && json.Unmarshal(ev.Data, &it) == nil && it.Item.Type == conversation.ItemMessage {
			partial = &it.Item
		}
	}
	if partial == nil || !partial.Partial || partial.Text == "" {
		t.Fatalf("resumed with %s; want the message as stored (partial) before the error", summary(after))
	}
	var e0 conversation.TurnError
	if err := json.Unmarshal(after[len(after)-1].Data, &e0); err != nil || e0.Code != "interrupted" {
		t.Fatalf("the takeover ended with %s; want interrupted", after[len(after)-1].Data)
	}
}

// cutter forwards TCP connections to a server until cut: then it closes
// them all and refuses new ones (a process that died, as its peer sees it).
type cutter struct {
	ln    net.Listener
	port  uint16
	mu    sync.Mutex
	conns []net.Conn
	done  bool
}

func newCutter(t *testing.T, host string, port uint16) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, port: uint16(ln.Addr().(*net.TCPAddr).Port)}
	t.Cleanup(c.cut)
	target := net.JoinHostPort(host, strconv.Itoa(int(port)))
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil || !c.keep(in, out) {
				in.Close()
				if out != nil {
					out.Close()
				}
				continue
			}
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return c
}

func (c *cutter) keep(conns ...net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return false
	}
	c.conns = append(c.conns, conns...)
	return true
}

func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	c.ln.Close()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}
