package emulator

import (
	"context"
)

// listing is the outcome of listing one server's tools for this request.
type listing struct {
	entry *mcpTool
	tools []ListedTool
	err   string // list-in-stream failure
}

// turn produces one response: it runs tools, emits events and builds the
// response object, firing the selected faults on the way.
type turn struct {
	ctx      context.Context // not the client's: a turn outlives a client that left
	s        *Server
	r        *request
	res      *resolved
	beh      Behavior
	em       *emitter
	resp     *Response
	out      []ctxItem
	conns    map[string]*mcpConn
	listings []listing
	stopped  bool // an error event or response.failed ended the turn
	fired    bool // the stream fault has fired
	// persist stores the response (when store is on); finish calls it
	// before the terminal event, as upstream has the response stored by
	// the time it says so: a client that chains at once must find it.
	persist func()
}

// ev emits one event, firing the stream fault first when its time has come.
func (t *turn) ev(set func(seq int) any) bool {
	if t.stopped {
		return false
	}
	if t.em.stream && !t.fired && t.beh.At == t.em.seq {
		t.fire()
		if t.stopped {
			return false
		}
	}
	t.em.send(set)
	return true
}

func (t *turn) fire() {
	t.fired = true
	b := t.beh
	if b.Stall > 0 {
		t.em.sleep(b.Stall)
	}
	switch {
	case b.Cut:
		t.em.cut = true
	case b.ErrorEv != "":
		t.fail(b.ErrorEv)
		t.em.send(func(seq int) any {
			return evError{Type: "error", Seq: seq, Code: b.ErrorEv, Message: "The server had an error while processing your request (emulated error event)."}
		})
		t.stopped = true
	case b.Failed != "":
		t.fail(b.Failed)
		snap := t.snapshot()
		t.em.send(func(seq int) any { return evResponse{Type: "response.failed", Seq: seq, Response: snap} })
		t.stopped = true
	}
}

func (t *turn) fail(code string) {
	t.resp.Status = "failed"
	t.resp.Error = &ResponseError{Code: code, Message: "The model failed to generate a response (emulated)."}
}

// snapshot copies the response as it stands, for an event.
func (t *turn) snapshot() *Response {
	c := *t.resp
	c.Output = append([]any{}, t.resp.Output...)
	return &c
}

func (t *turn) add(item any, ci ctxItem) int {
	t.resp.Output = append(t.resp.Output, item)
	t.out = append(t.out, ci)
	return len(t.resp.Output) - 1
}

func (t *turn) conn(e *mcpTool) *mcpConn {
	c, ok := t.conns[e.Label]
	if !ok {
		c = newMCPConn(*e, t.s.cfg.MCPTimeout)
		t.conns[e.Label] = c
	}
	return c
}

// run produces the whole turn.
func (t *turn) run() {
	created := t.snapshot()
	t.ev(func(seq int) any { return evResponse{Type: "response.created", Seq: seq, Response: created} })
	t.ev(func(seq int) any { return evResponse{Type: "response.in_progress", Seq: seq, Response: created} })

	var listErrs []string
	for _, l := range t.listings {
		id := newID("mcpl_")
		item := &ListToolsItem{ID: id, Type: "mcp_list_tools", ServerLabel: l.entry.Label, Tools: l.tools}
		if l.err != "" {
			msg := l.err
			item.Error = &msg
			item.Tools = []ListedTool{}
			listErrs = append(listErrs, "I could not list the tools of the MCP server "+l.entry.Label+": "+l.err)
		}
		idx := t.add(item, ctxItem{Type: "mcp_list_tools", ID: id, ServerLabel: l.entry.Label, Tools: item.Tools})
		added := ListToolsItem{ID: id, Type: "mcp_list_tools", ServerLabel: l.entry.Label, Tools: []ListedTool{}}
		t.ev(func(seq int) any { return evItem{"response.output_item.added", seq, idx, added} })
		t.ev(func(seq int) any { return evItemID{"response.mcp_list_tools.in_progress", seq, idx, id} })
		if l.err != "" {
			t.ev(func(seq int) any { return evItemID{"response.mcp_list_tools.failed", seq, idx, id} })
		} else {
			t.ev(func(seq int) any { return evItemID{"response.mcp_list_tools.completed", seq, idx, id} })
		}
		done := *item
		t.ev(func(seq int) any { return evItem{"response.output_item.done", seq, idx, done} })
	}

	var results []callResult
	var denials []denial
	var retries []mention // denials with a correction: asked again with the arguments it gives
	offers := t.offers()
	ranApproved := false
	for _, a := range t.res.answers {
		req := t.res.requests[a.ApprovalRequestID]
		if !a.Approve {
			if m, ok := corrected(req, a.Reason, offers); ok {
				retries = append(retries, m)
				continue
			}
			denials = append(denials, denial{req.ServerLabel, req.Name, a.Reason})
			continue
		}
		if t.stopped {
			break
		}
		entry := findTool(t.r.Tools, req.ServerLabel)
		results = append(results, t.call(entry, req.Name, req.Arguments, req.ID))
		ranApproved = true
	}

	text, hasUser := t.res.userText()
	pending := 0
	reasoning := isReasoningModel(t.r.Model)
	mentions := retries
	if hasUser {
		mentions = append(mentions, findMentions(text, offers)...)
	}
	for _, m := range mentions {
		if t.stopped {
			break
		}
		if reasoning {
			t.reasoning()
		}
		if m.offer.needsApproval {
			t.approvalRequest(m)
			pending++
			continue
		}
		results = append(results, t.call(m.offer.entry, m.offer.tool.Name, m.args, ""))
	}
	if pending == 0 && !t.stopped {
		if reasoning && !ranApproved {
			t.reasoning()
		}
		t.message(compose(results, denials, listErrs, text, hasUser, offers))
	}
	t.finish(text)
}

// offers lists the tools the model may call, in tools order.
func (t *turn) offers() []offer {
	byLabel := map[string][]ListedTool{}
	for label, tools := range t.res.listed {
		byLabel[label] = tools
	}
	for _, l := range t.listings {
		byLabel[l.entry.Label] = l.tools
	}
	var out []offer
	for i := range t.r.Tools {
		e := &t.r.Tools[i]
		for _, tool := range byLabel[e.Label] {
			ro := tool.Annotations != nil && tool.Annotations.ReadOnly
			if e.Allowed != nil && !e.Allowed.matches(tool.Name, ro) {
				continue
			}
			out = append(out, offer{entry: e, tool: tool, needsApproval: e.Approval.needsApproval(tool.Name, ro)})
		}
	}
	return out
}

func (t *turn) reasoning() {
	id := newID("rs_")
	item := ReasoningItem{ID: id, Type: "reasoning", Summary: []any{}}
	idx := t.add(item, ctxItem{Type: "reasoning", ID: id})
	t.ev(func(seq int) any { return evItem{"response.output_item.added", seq, idx, item} })
	t.ev(func(seq int) any { return evItem{"response.output_item.done", seq, idx, item} })
}

func (t *turn) approvalRequest(m mention) {
	id := newID("mcpr_")
	item := ApprovalRequestItem{ID: id, Type: "mcp_approval_request", Arguments: m.args, Name: m.offer.tool.Name, ServerLabel: m.offer.entry.Label}
	idx := t.add(item, ctxItem{Type: "mcp_approval_request", ID: id, ServerLabel: item.ServerLabel, Name: item.Name, Arguments: item.Arguments})
	t.ev(func(seq int) any { return evItem{"response.output_item.added", seq, idx, item} })
	t.ev(func(seq int) any { return evItem{"response.output_item.done", seq, idx, item} })
}

// call runs one tool and emits its mcp_call; approvalID is the mcpr_ id when
// the call was approved (the recordings show mcp_call.in_progress twice then).
func (t *turn) call(entry *mcpTool, name, args, approvalID string) callResult {
	id := newID("mcp_")
	var apr *string
	if approvalID != "" {
		apr = &approvalID
	}
	item := &CallItem{ID: id, Type: "mcp_call", Status: "in_progress", ApprovalRequestID: apr, Arguments: "", Name: name, ServerLabel: entry.Label}
	idx := t.add(item, ctxItem{Type: "mcp_call", ID: id, ServerLabel: entry.Label, Name: name, Arguments: args, ApprovalRequestID: approvalID})
	added := *item
	t.ev(func(seq int) any { return evItem{"response.output_item.added", seq, idx, added} })
	t.ev(func(seq int) any { return evItemID{"response.mcp_call.in_progress", seq, idx, id} })
	t.ev(func(seq int) any {
		return evArgsDelta{"response.mcp_call_arguments.delta", seq, idx, id, args, obfuscation(args)}
	})
	if approvalID != "" {
		t.ev(func(seq int) any { return evItemID{"response.mcp_call.in_progress", seq, idx, id} })
	}
	t.ev(func(seq int) any { return evArgsDone{"response.mcp_call_arguments.done", seq, idx, id, args} })

	var out string
	var cerr *CallError
	if t.beh.MCPError == "call" {
		cerr = httpError(500, "Internal Server Error (emulated MCP server error)")
	} else {
		out, cerr = t.conn(entry).call(t.ctx, name, args)
	}
	item.Arguments = args
	if cerr != nil {
		item.Status = "failed"
		item.Error = cerr
		t.ev(func(seq int) any { return evItemID{"response.mcp_call.failed", seq, idx, id} })
	} else {
		item.Status = "completed"
		item.Output = &out
		t.ev(func(seq int) any { return evItemID{"response.mcp_call.completed", seq, idx, id} })
	}
	done := *item
	t.ev(func(seq int) any { return evItem{"response.output_item.done", seq, idx, done} })
	return callResult{label: entry.Label, name: name, output: out, err: cerr}
}

func (t *turn) message(text string) {
	status := "completed"
	if t.beh.Incomp != "" {
		text, status = half(text), "incomplete"
	}
	id := newID("msg_")
	item := &MessageItem{ID: id, Type: "message", Status: "in_progress", Content: []OutputText{}, Role: "assistant"}
	idx := t.add(item, ctxItem{Type: "message", ID: id, Role: "assistant", Text: text})
	added := *item
	t.ev(func(seq int) any { return evItem{"response.output_item.added", seq, idx, added} })
	t.ev(func(seq int) any { return evPart{"response.content_part.added", seq, id, idx, 0, newOutputText("")} })
	for _, d := range splitText(text, t.beh) {
		t.ev(func(seq int) any {
			return evTextDelta{"response.output_text.delta", seq, id, idx, 0, d, []any{}, obfuscation(d)}
		})
	}
	t.ev(func(seq int) any { return evTextDone{"response.output_text.done", seq, id, idx, 0, text, []any{}} })
	t.ev(func(seq int) any { return evPart{"response.content_part.done", seq, id, idx, 0, newOutputText(text)} })
	item.Status = status
	item.Content = []OutputText{newOutputText(text)}
	done := *item
	t.ev(func(seq int) any { return evItem{"response.output_item.done", seq, idx, done} })
}

// finish sets the final status and sends the terminal event, unless a fault
// ended the stream already. A stream fault that did not fire yet fires here,
// just before the terminal event.
func (t *turn) finish(userText string) {
	if t.em.stream && !t.fired && !t.stopped && (t.beh.Cut || t.beh.ErrorEv != "" || t.beh.Failed != "" || t.beh.Stall > 0) {
		t.fire()
	}
	if !t.em.stream && !t.stopped {
		switch {
		case t.beh.ErrorEv != "":
			t.fail(t.beh.ErrorEv)
			t.stopped = true
		case t.beh.Failed != "":
			t.fail(t.beh.Failed)
			t.stopped = true
		}
	}
	now := t.s.now().Unix()
	var words int
	for _, it := range t.out {
		words += countWords(it.Text) + countWords(it.Arguments)
	}
	u := &Usage{InputTokens: countWords(userText) + 10*len(t.r.Tools), OutputTokens: words}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	t.resp.Usage = u
	if t.stopped {
		return
	}
	if t.beh.Incomp != "" {
		t.resp.Status = "incomplete"
		t.resp.IncompleteDetails = &IncompleteDetail{Reason: t.beh.Incomp}
		snap := t.snapshot()
		t.persist()
		t.ev(func(seq int) any { return evResponse{Type: "response.incomplete", Seq: seq, Response: snap} })
		return
	}
	t.resp.Status = "completed"
	t.resp.CompletedAt = &now
	snap := t.snapshot()
	t.persist()
	t.ev(func(seq int) any { return evResponse{Type: "response.completed", Seq: seq, Response: snap} })
}

// listAll lists, before the stream starts, every server not yet listed in
// the context (the API does not list a server again while its
// mcp_list_tools item is in context). A failure is the real API's 424,
// unless the behavior asks for the in-stream failure.
func (t *turn) listAll() *apiError {
	for i := range t.r.Tools {
		e := &t.r.Tools[i]
		if _, ok := t.res.listed[e.Label]; ok {
			continue
		}
		switch t.beh.MCPError {
		case "list":
			return t.conn(e).listFailure(nil)
		case "list-in-stream":
			t.listings = append(t.listings, listing{entry: e, err: "Http status code: 424 (Failed Dependency) (emulated)"})
			continue
		}
		tools, err := t.conn(e).list(t.ctx)
		if err != nil {
			return t.conn(e).listFailure(err)
		}
		t.listings = append(t.listings, listing{entry: e, tools: tools})
	}
	return nil
}

func (t *turn) close() {
	for _, c := range t.conns {
		c.close()
	}
}

// newResponse starts the response object for r.
func (s *Server) newResponse(r *request) *Response {
	resp := &Response{
		ID: newID("resp_"), Object: "response", CreatedAt: s.now().Unix(), Status: "in_progress",
		Instructions: r.Instructions, Model: r.Model, Output: []any{}, ParallelToolCalls: r.ParallelToolCalls,
		ServiceTier: "default", Store: r.Store, Temperature: 1, ToolChoice: "auto", TopP: 1,
		Truncation: "disabled", Metadata: map[string]string{}, Tools: []EchoedTool{},
	}
	if r.PreviousResponseID != "" {
		p := r.PreviousResponseID
		resp.PreviousResponseID = &p
	}
	if r.Metadata != nil {
		resp.Metadata = r.Metadata
	}
	if isReasoningModel(r.Model) {
		e := "medium"
		resp.Reasoning.Effort = &e
	}
	resp.Text.Format.Type = "text"
	resp.Text.Verbosity = "medium"
	for _, t := range r.Tools {
		resp.Tools = append(resp.Tools, EchoedTool{
			Type: "mcp", AllowedTools: t.AllowedRaw, RequireApproval: t.ApprovalRaw,
			ServerDescription: t.Description, ServerLabel: t.Label, ServerURL: t.URL,
		})
	}
	return resp
}
