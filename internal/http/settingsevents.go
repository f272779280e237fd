package http

import (
	"context"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/changefeed"
)

// EventSettingsChanged is the settings stream's one event.
const EventSettingsChanged = "settings.changed"

// SettingsChangedEvent says that settings changed, not how: the page reads
// them again through the API, as its caller, so nothing of what another
// person may not see rides along.
type SettingsChangedEvent struct {
	// Version is policy_version now (also the event's id).
	Version int64 `json:"version"`
	// Kinds is what changed since the last event, in the order heard.
	Kinds []policy.ChangeKind `json:"kinds"`
}

// settingsEvents is GET /api/settings/events: a settings.changed event
// whenever a change the caller may see commits, on any replica, until the
// client leaves or the server shuts down. Resumed with Last-Event-ID (a
// version) behind the version now, it says resync at once.
func (s *Server) settingsEvents(c echo.Context) error {
	after, err := resumeAfter(c, "the settings stream (a settings version)")
	if err != nil {
		return err
	}
	ctx, done := s.untilClosing(c.Request().Context())
	defer done()
	u, _ := auth.UserFrom(ctx)
	// Watching before reading the version: a change committed between the
	// two is told, not lost.
	w := s.changes.Watch(u.ID, u.IsAdmin())
	defer w.Close()
	v, err := s.policies.Requests.Version(ctx)
	if err != nil {
		return err
	}
	v = s.changes.Seen(v)
	c.Response().Header().Set("X-Settings-Version", strconv.FormatInt(v, 10))
	sink := s.openStream(c, "")
	defer s.metrics.StreamOpened()()
	if after >= 0 && after != v {
		sink.SendAt(v, EventSettingsChanged, SettingsChangedEvent{Version: v, Kinds: []policy.ChangeKind{policy.ChangeResync}})
	}
	s.relaySettings(ctx, sink, w)
	return nil
}

// relaySettings sends w's changes to sink, and a heartbeat when idle, until
// ctx ends or the client stops reading.
func (s *Server) relaySettings(ctx context.Context, sink *sseSink, w *changefeed.Watcher) {
	beat := time.NewTimer(s.heartbeat)
	defer beat.Stop()
	for !sink.closed() {
		select {
		case <-ctx.Done():
			return
		case <-w.Ready():
			v, kinds := w.Take()
			if len(kinds) > 0 {
				sink.SendAt(v, EventSettingsChanged, SettingsChangedEvent{Version: v, Kinds: kinds})
			}
		case <-beat.C:
			sink.ping()
			beat.Reset(s.heartbeat)
		}
	}
}
