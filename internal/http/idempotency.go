package http

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/idempotency"
)

// Idempotency keys on the routes that start a chat turn (docs/api.md,
// "Idempotency keys"; docs/sse-events.md): per user, the first request with
// an Idempotency-Key runs and its stream is stored; a repeat with the same
// key and body gets that stream again, without a new turn or upstream call.

// IdempotencyTTL is how long a key is kept after its first request.
const IdempotencyTTL = 24 * time.Hour

const (
	idempotencyHeader = "Idempotency-Key"
	// replayedHeader marks a stream replayed for a repeated key.
	replayedHeader = "Idempotent-Replayed"
	// idempotencyRecorder is the echo context key of the request's recorder.
	idempotencyRecorder = "toolgate.idempotency"
	maxIdempotencyKey   = 255
)

// IdempotencyStore keeps the keys (internal/postgres implements it).
type IdempotencyStore interface {
	Reserve(ctx context.Context, userID, key string, hash []byte, ttl time.Duration, hold idempotency.Hold) (idempotency.Key, bool, error)
	Renew(ctx context.Context, userID, key, holder string, lease time.Duration) (bool, error)
	Started(ctx context.Context, userID, key, holder, conversationID string) error
	Complete(ctx context.Context, userID, key, holder string, events []byte) error
	Release(ctx context.Context, userID, key, holder string) error
}

// recordedEvent is one stored event of a stream.
type recordedEvent struct {
	ID    int64           `json:"id,omitempty"` // the event's id in the conversation (0 in keys stored before ids were)
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// streamRecorder passes a turn's events on to the stream and keeps
// them (all but text.delta: the message's item.done has the whole text).
type streamRecorder struct {
	mu      sync.Mutex
	next    storedSink
	events  []recordedEvent
	started bool
	begin   func(conversationID string)
}

// start is called by stream once the turn is accepted, before the first
// byte: from here on the key belongs to this turn. The stream then sets
// next.
func (r *streamRecorder) start(conversationID string) {
	r.started = true
	r.begin(conversationID)
}

// SendStored passes ev on and keeps it.
func (r *streamRecorder) SendStored(ev conversation.StoredEvent) {
	r.mu.Lock() // one event at a time: the stored order is the streamed order
	defer r.mu.Unlock()
	r.next.SendStored(ev)
	if ev.Name == conversation.EventNameTextDelta {
		return
	}
	r.events = append(r.events, recordedEvent{ID: ev.ID, Event: ev.Name, Data: json.RawMessage(ev.Data)})
}

// validIdempotencyKey reports whether key is 1 to 255 printable ASCII
// characters.
func validIdempotencyKey(key string) bool {
	if len(key) == 0 || len(key) > maxIdempotencyKey {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// requestHash identifies what a request asks for: its route and its body
// as canonical JSON (key order and spacing do not matter), or the raw body
// when it is not JSON (the handler refuses it anyway).
func requestHash(route string, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(route))
	h.Write([]byte{0})
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil && errors.Is(dec.Decode(new(any)), io.EOF) { // one JSON value, nothing after it
		if canon, err := json.Marshal(v); err == nil {
			body = canon
		}
	}
	h.Write(body)
	return h.Sum(nil)
}

// idempotent makes a turn-starting route honour the Idempotency-Key header.
// A request without one goes on in a small frame: its stream waits below
// this frame for as long as the turn runs, and a stack that stays under
// 4 KiB deep while it waits is shrunk to 8 KiB by the collector.
func (s *Server) idempotent(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if len(c.Request().Header.Values(idempotencyHeader)) == 0 || s.idem == nil {
			return next(c)
		}
		return s.idempotentKeyed(c, next)
	}
}

// idempotentKeyed runs next for a request with an Idempotency-Key header.
func (s *Server) idempotentKeyed(c echo.Context, next echo.HandlerFunc) error {
	keys := c.Request().Header.Values(idempotencyHeader)
	u, signedIn := auth.UserFrom(c.Request().Context())
	if !signedIn {
		return next(c)
	}
	if len(keys) > 1 || !validIdempotencyKey(keys[0]) {
		return apperr.Invalidf("invalid_idempotency_key", idempotencyHeader,
			"send one Idempotency-Key header of 1 to %d printable ASCII characters (a UUID, say)", maxIdempotencyKey)
	}
	key := keys[0]
	req := c.Request()
	var body []byte
	if req.Body != nil {
		raw, err := io.ReadAll(req.Body) // the guard read and bounded it already
		if err != nil {
			return fmt.Errorf("read request body: %w", err)
		}
		body = raw
		req.Body = io.NopCloser(bytes.NewReader(raw))
	}
	hash := requestHash(c.Path(), body)
	ctx := req.Context()
	// The key is held by this request on a lease that this replica renews
	// while the request runs: if the replica dies, a repeat settles the
	// key once the lease ran out (idempotencydb.Store.Reserve).
	lease := s.chat.LeaseTTL()
	holder := s.chat.Replica() + "/" + randomHolder()
	held, reserved, err := s.idem.Reserve(ctx, u.ID, key, hash, IdempotencyTTL, idempotency.Hold{Holder: holder, Lease: lease})
	if err != nil {
		return err
	}
	if !reserved {
		return s.repeated(c, held, hash)
	}
	store := context.WithoutCancel(ctx)
	stopRenewing := s.renewIdempotencyKey(store, u.ID, key, holder, lease)
	defer stopRenewing()
	// The turn this request starts records itself on the key, in the
	// transaction that opens it.
	c.SetRequest(req.WithContext(engine.WithIdempotencyKey(ctx, engine.IdempotencyKey{Key: key, Holder: holder})))
	rec := &streamRecorder{begin: func(conv string) {
		if err := s.idem.Started(store, u.ID, key, holder, conv); err != nil {
			s.log.Error("record the conversation of an idempotency key", "error", err)
		}
	}}
	c.Set(idempotencyRecorder, rec)
	defer func() {
		if !rec.started { // refused before the turn began (or a panic): nothing ran, a repeat may run
			if err := s.idem.Release(store, u.ID, key, holder); err != nil {
				s.log.Error("release an idempotency key", "error", err)
			}
		}
	}()
	err = next(c)
	if rec.started {
		rec.mu.Lock()
		events, merr := json.Marshal(rec.events)
		rec.mu.Unlock()
		if merr == nil {
			merr = s.idem.Complete(store, u.ID, key, holder, events)
		}
		if merr != nil {
			// The key stays in flight until its lease runs out: a repeat
			// then gets the turn's stored events, never a second turn.
			s.log.Error("store the stream of an idempotency key", "error", merr)
		}
	}
	return err
}

// renewIdempotencyKey renews the lease of the key holder holds every third
// of lease until the returned function is called.
func (s *Server) renewIdempotencyKey(ctx context.Context, userID, key, holder string, lease time.Duration) func() {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if _, err := s.idem.Renew(ctx, userID, key, holder, lease); err != nil {
					s.log.Warn("renew the lease of an idempotency key", "error", err)
				}
			}
		}
	}()
	return func() { close(done) }
}

// randomHolder tells apart the requests of one replica that held a key.
func randomHolder() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// repeated answers a request whose key is already held.
func (s *Server) repeated(c echo.Context, held idempotency.Key, hash []byte) error {
	if !bytes.Equal(held.RequestHash, hash) {
		return apperr.New(apperr.Unprocessable, "idempotency_key_reused",
			"this Idempotency-Key was used for a different request (another body or route) in the last 24 hours; use a new key for a new request")
	}
	if held.State != idempotency.Done {
		e := apperr.New(apperr.Conflict, "idempotency_key_in_flight",
			"the first request with this Idempotency-Key is still running; send it again after its stream ended to get the same answer")
		if held.ConversationID != "" {
			e.Details = map[string]string{"conversation_id": held.ConversationID}
		}
		return e
	}
	var events []recordedEvent
	if err := json.Unmarshal(held.Events, &events); err != nil {
		return fmt.Errorf("read the stored stream of an idempotency key: %w", err)
	}
	c.Response().Header().Set(replayedHeader, "true")
	sink := s.openStream(c, held.ConversationID)
	sink.hold()
	defer sink.release()
	for _, ev := range events {
		if ev.ID > 0 {
			sink.SendStored(conversation.StoredEvent{ID: ev.ID, Name: ev.Event, Data: ev.Data})
		} else {
			sink.Send(ev.Event, ev.Data)
		}
	}
	return nil
}

// recorder returns the request's stream recorder, if it carries a key.
func recorder(c echo.Context) (*streamRecorder, bool) {
	r, ok := c.Get(idempotencyRecorder).(*streamRecorder)
	return r, ok
}
