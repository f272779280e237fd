package http

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/inbox"
)

// The inbox (docs/api.md, "The inbox"): every approval request waiting for
// the signed-in person, across their chats and agents; a decision on one
// by its id; and a stream that says when the list changed. Each caller
// sees and decides only their own: another person's request is not found.

type approvalsResponse struct {
	Approvals []inbox.Waiting `json:"approvals"`
}

// inboxOff answers the inbox routes of a server built without one.
func (s *Server) inboxOff() error {
	if s.inbox == nil {
		return apperr.New(apperr.Unavailable, "inbox_unavailable", "this server was started without the inbox")
	}
	return nil
}

// listApprovals is GET /api/approvals?state=pending.
func (s *Server) listApprovals(c echo.Context) error {
	if err := inbox.ValidState(c.QueryParam("state")); err != nil {
		return err
	}
	if err := s.inboxOff(); err != nil {
		return err
	}
	ws, err := s.inbox.Pending(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, approvalsResponse{Approvals: ws})
}

// decideApproval is POST /api/approvals/{approval_request_id}/decision:
// the body of one chat decision, for a chat's request or an agent's held
// call alike.
func (s *Server) decideApproval(c echo.Context) error {
	var d conversation.Decision
	if err := s.decode(c, &d); err != nil {
		return err
	}
	if err := s.inboxOff(); err != nil {
		return err
	}
	w, err := s.inbox.Decide(c.Request().Context(), c.Param("approvalRequestId"), d)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

// EventApprovalsChanged is the inbox stream's one event.
const EventApprovalsChanged = "approvals.changed"

// ApprovalsChangedEvent says what waits now, not what each request is: the
// page reads the list again through the API.
type ApprovalsChangedEvent struct {
	Pending            int      `json:"pending"`
	ApprovalRequestIDs []string `json:"approval_request_ids"`
}

// inboxQuiet is the least time between two reads of one stream's inbox:
// a chat streaming text announces its events many times a second.
const inboxQuiet = 250 * time.Millisecond

// approvalEvents is GET /api/approvals/events: an approvals.changed event
// at once, then whenever the set of the caller's waiting requests changes
// (asked, decided, expired, withdrawn, on any replica), until the client
// leaves or the server shuts down.
func (s *Server) approvalEvents(c echo.Context) error {
	if err := s.inboxOff(); err != nil {
		return err
	}
	ctx, done := s.untilClosing(c.Request().Context())
	defer done()
	u, _ := auth.UserFrom(ctx)
	// Watching before the first read: a change committed between the two
	// is told, not lost.
	w := s.inboxHub.Watch(u.ID)
	defer w.Close()
	snap, err := s.inbox.Snap(ctx)
	if err != nil {
		return err
	}
	sink := s.openStream(c, "")
	defer s.metrics.StreamOpened()()
	sink.Send(EventApprovalsChanged, ApprovalsChangedEvent{Pending: len(snap.IDs), ApprovalRequestIDs: snap.IDs})
	s.relayInbox(ctx, sink, w, snap)
	return nil
}

// relayInbox reads the inbox again when w rings or its first request runs
// out of time, and tells sink when the set waiting changed; a heartbeat
// when idle.
func (s *Server) relayInbox(ctx context.Context, sink *sseSink, w *inbox.Watcher, last inbox.Snapshot) {
	beat := time.NewTimer(s.heartbeat)
	defer beat.Stop()
	expiry := time.NewTimer(untilExpiry(last))
	defer expiry.Stop()
	for !sink.closed() {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			sink.ping()
			beat.Reset(s.heartbeat)
			continue
		case <-w.Ready():
		case <-expiry.C:
		}
		snap, err := s.inbox.Snap(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "reading the inbox failed; ending its stream (the client reconnects)", "error", err)
			}
			return
		}
		if !slices.Equal(snap.IDs, last.IDs) {
			sink.Send(EventApprovalsChanged, ApprovalsChangedEvent{Pending: len(snap.IDs), ApprovalRequestIDs: snap.IDs})
		}
		last = snap
		expiry.Reset(untilExpiry(last))
		select { // at most one read per inboxQuiet
		case <-ctx.Done():
			return
		case <-time.After(inboxQuiet):
		}
	}
}

// untilExpiry is how long until snap's first request runs out of time (a
// day when none does: the timer then only stands by).
func untilExpiry(snap inbox.Snapshot) time.Duration {
	if snap.NextExpiry == nil {
		return 24 * time.Hour
	}
	return max(time.Until(*snap.NextExpiry)+50*time.Millisecond, 0)
}
