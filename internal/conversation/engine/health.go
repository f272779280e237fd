package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// A broken MCP server breaks only itself: a request leaves out the servers
// that are unreachable (and says so in the turn), a 424 naming one server
// is sent again without it, and what a turn learns about a server's health
// is recorded for the next requests, on every replica.

// serverHealth reads the tools a request offers, leaving out the servers
// that are unreachable, and records what a turn learns about its MCP
// servers' health, for the next requests on every replica.
type serverHealth struct {
	policies conversation.Policies
	log      *slog.Logger
}

// requestTools reads the tools the request offers and tells the person
// which servers it left out. The servers the request answers approval
// requests for are offered whatever their health: upstream rejects an
// answer whose server is missing.
func (h *serverHealth) requestTools(r *relay) error {
	t, s := r.t, r.t.s
	keep := map[string]bool{}
	for _, a := range t.answers {
		keep[a.ServerLabel] = true
	}
	var groups []policy.ServerTools
	var skipped []policy.SkippedServer
	var err error
	if rd := t.policies; rd != nil {
		// Read when the turn opened; a later request of the turn (after
		// rules answered) reads again.
		t.policies = nil
		groups, skipped, err = h.policies.Tools.RequestAt(r.store, *rd, t.grants, keep)
	} else {
		groups, skipped, err = h.policies.Tools.Request(r.store, t.user.ID, t.grants, keep)
	}
	if err != nil {
		return err
	}
	// What the person turned off for this conversation is not offered at all (book/tools.go).
	groups, skipped = t.conv.Tools.Apply(groups, keep), t.conv.Tools.ApplySkipped(skipped)
	if p := s.prelist; p != nil { // direct mode: what would run unasked is listed first (conversation/prelist)
		if groups, skipped, err = r.prelisted(p, groups, skipped, keep); err != nil {
			return err
		}
	}
	r.groups = groups
	for _, sk := range skipped {
		r.notice(conversation.Notice{Code: conversation.NoticeServerSkipped, ServerLabel: sk.Label, Message: conversation.SkippedMessage(sk, s.now())})
	}
	return nil
}

// stream sends req. When the provider answers 424 naming one of its servers
// (it could not list that server's tools), the server is recorded as
// unreachable, and a request without decisions is sent once more without
// it. A request with decisions is never sent twice: it may have been acted
// on, and at most once is the rule.
func (r *relay) stream(ctx context.Context, req conversation.UpstreamRequest) (conversation.EventStream, error) {
	s := r.t.s
	for retried := false; ; retried = true {
		es, err := s.upstream.Stream(ctx, req)
		var ue *conversation.UpstreamError
		if err == nil || !errors.As(err, &ue) || ue.ServerLabel == "" {
			return es, err
		}
		i := slices.IndexFunc(r.groups, func(g policy.ServerTools) bool { return g.Server.Label == ue.ServerLabel })
		if i < 0 {
			return nil, err
		}
		srv := r.groups[i].Server
		ue.Message = policy.MaskURLIn(ue.Message, srv.URL) // the provider quotes the URL it could not reach
		s.serverHealth.serverFailed(r, srv, "the model's provider could not list its tools: "+ue.Message)
		if retried || len(req.Answers) > 0 {
			return nil, err
		}
		r.groups = slices.Delete(slices.Clone(r.groups), i, i+1)
		req.Tools = r.groups
		r.notice(conversation.Notice{Code: conversation.NoticeServerDropped, ServerLabel: srv.Label, Message: fmt.Sprintf(
			"%s dropped: the model's provider could not list its tools (%s); the request was sent again without it",
			srv.Label, conversation.Clip(ue.Message))})
	}
}

// itemHealth records what a finished item says about its server: a
// listing that failed (unreachable at once), a call the provider could not
// deliver (an http_error of 502, 503 or 504: nothing answered, or only a
// gateway; counted, unreachable after MCP_HEALTH_FAILURES in a row), or a
// call that reached it (the count starts again).
func (h *serverHealth) itemHealth(r *relay, u *conversation.UpstreamItem) {
	i := slices.IndexFunc(r.groups, func(g policy.ServerTools) bool { return g.Server.Label == u.ServerLabel })
	if i < 0 {
		return
	}
	srv := r.groups[i].Server
	var err error
	switch {
	case u.Type == conversation.ItemListTools && conversation.Given(u.ListError):
		h.serverFailed(r, srv, "the model's provider could not list its tools: "+conversation.ErrorText(u.ListError))
	case u.Type == conversation.ItemCall && conversation.UnreachableCall(u.CallError):
		// One call that could not get through (often one that was slow)
		// does not take the server out for everyone: failures in a row do.
		err = h.policies.Health.CallFailed(r.store, srv.Label, srv.URL,
			fmt.Sprintf("the model's provider could not reach it to call %s: %s", u.Name, conversation.ErrorText(u.CallError)))
	case u.Type == conversation.ItemCall:
		err = h.policies.Health.CallWorked(r.store, srv.Label, srv.URL)
	}
	if err != nil {
		h.log.WarnContext(r.store, "recording an MCP server's health failed", "server_id", srv.Label, "error", err)
	}
}

// serverFailed records srv as unreachable; the turn goes on whatever
// happens to the write.
func (h *serverHealth) serverFailed(r *relay, srv policy.Server, reason string) {
	if err := h.policies.Health.ServerFailed(r.store, srv.Label, srv.URL, reason); err != nil {
		h.log.WarnContext(r.store, "recording an MCP server unreachable failed", "server_id", srv.Label, "error", err)
	}
}
