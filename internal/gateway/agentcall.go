package gateway

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/policy"
)

// agentList answers tools/list with the tools the person may see: for
// /mcp/{label} that server's, for /mcp every enabled server's, named
// {server_label}__{tool}. Blocked tools are left out. A server that cannot
// be listed now is left out of /mcp (and logged); /mcp/{label} says so.
func (f *agentFace) agentList(_ context.Context, st *agentSession, req mcp.Request) (*mcp.ListToolsResult, error) {
	ctx, ok := f.requestContext(req)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Toolgate lost this request's context; try again"}
	}
	conv, err := f.conversation(ctx, st, req)
	if err != nil {
		return nil, f.listFailed(ctx, "could not open the session's record", err)
	}
	servers, err := f.scopeServers(ctx, st)
	if err != nil {
		return nil, f.listFailed(ctx, "could not read the servers", err)
	}
	out := &mcp.ListToolsResult{Tools: []*mcp.Tool{}, Cacheable: mcp.Cacheable{TTLMs: 0, CacheScope: "private"}}
	for _, srv := range servers {
		tools, err := f.defs.forList(ctx, srv, f.maxAge)
		if err != nil {
			f.log.WarnContext(ctx, "mcp agent face: could not list a server", "server", srv.Label, "error", err)
			if st.scope != "" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
					Message: fmt.Sprintf("Toolgate could not list the tools of %s: %s", srv.Label, scrub(srv, errText(err)))}
			}
			continue
		}
		visible, err := f.gate.Listed(ctx, Claims{ConversationID: conv, ServerLabel: srv.Label, Agent: true}, tools)
		if err != nil {
			var ref *Refusal
			if errors.As(err, &ref) {
				continue // the server went away or was disabled meanwhile
			}
			return nil, f.listFailed(ctx, "could not record a listing", err)
		}
		for _, t := range visible {
			mt := toMCP(t)
			if st.scope == "" {
				mt.Name = srv.Label + ToolSeparator + t.Name
			}
			out.Tools = append(out.Tools, mt)
		}
	}
	return out, nil
}

func (f *agentFace) listFailed(ctx context.Context, what string, err error) error {
	f.log.ErrorContext(ctx, "mcp agent face: "+what, "error", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: "Toolgate could not check which tools you may see (its database did not answer); try again later"}
}

// resolve finds the server and tool a call names: in /mcp, the longest
// enabled server label the name begins with followed by __.
func (f *agentFace) resolve(ctx context.Context, st *agentSession, name string) (policy.Server, string, *Refusal, error) {
	servers, err := f.scopeServers(ctx, st)
	if err != nil {
		return policy.Server{}, "", nil, err
	}
	if st.scope != "" {
		if len(servers) == 0 {
			return policy.Server{}, "", &Refusal{Code: RefusedServer, Message: msgServerGone}, nil
		}
		return servers[0], name, nil, nil
	}
	sort.Slice(servers, func(i, j int) bool { return len(servers[i].Label) > len(servers[j].Label) })
	for _, srv := range servers {
		if tool, ok := strings.CutPrefix(name, srv.Label+ToolSeparator); ok && tool != "" {
			return srv, tool, nil, nil
		}
	}
	return policy.Server{}, "", &Refusal{Code: RefusedUnknownTool, Message: fmt.Sprintf(
		"There is no tool %q: at /mcp a tool is named {server_label}__{tool} after an enabled server you may use; nothing ran.", name)}, nil
}

const msgServerGone = "The MCP server is disabled or no longer registered; the call did not run."

// agentCall checks one tools/call of a person's client with the Gate; a
// call that needs a person is held until it is decided.
func (f *agentFace) agentCall(mctx context.Context, st *agentSession, req mcp.Request, p *mcp.CallToolParamsRaw) *mcp.CallToolResult {
	start := time.Now()
	hctx, ok := f.requestContext(req)
	if !ok {
		return refused(&Refusal{Code: RefusedUnavailable, Message: "Toolgate lost this request's context, so nothing ran; try again."})
	}
	// The call ends when its HTTP request does (the client hung up) or
	// when the client cancels it (notifications/cancelled, which the
	// TypeScript SDK sends when its own timeout passes): a held call is
	// then withdrawn.
	ctx, cancel := context.WithCancel(hctx)
	defer cancel()
	defer context.AfterFunc(mctx, cancel)()
	if p == nil || p.Name == "" {
		return refused(&Refusal{Code: RefusedUnknownTool, Message: "The call names no tool; nothing ran."})
	}
	conv, err := f.conversation(ctx, st, req)
	if err != nil {
		f.log.ErrorContext(ctx, "mcp agent face: could not open the session's record", "error", err)
		return refused(&Refusal{Code: RefusedUnavailable, Message: "Toolgate could not record this session (its database did not answer), so nothing ran; try again later."})
	}
	srv, tool, ref, err := f.resolve(ctx, st, p.Name)
	if err != nil {
		f.log.ErrorContext(ctx, "mcp agent face: could not read the servers", "error", err)
		return refused(&Refusal{Code: RefusedUnavailable, Message: "Toolgate could not check this call (its database did not answer), so nothing ran; try again later."})
	}
	if ref != nil {
		return refused(ref)
	}
	who := client(req)
	claims := Claims{ConversationID: conv, TurnID: "call_" + newKey(), ServerLabel: srv.Label, Agent: true, Client: &who}
	call, out := f.prepare(ctx, srv, claims, tool, p.Name, p.Arguments)
	if out != nil {
		return out
	}
	v, out := f.admit(ctx, srv, call)
	if out != nil {
		return out
	}
	if v.Refusal != nil && v.Refusal.Code == RefusedNotApproved {
		outcome, err := f.agents.Hold(ctx, call, f.holdHooks(mctx, req, p))
		switch {
		case err != nil:
			f.log.ErrorContext(ctx, "mcp agent face: could not hold a call", "server", srv.Label, "tool", tool, "error", err)
			return refused(&Refusal{Code: RefusedUnavailable, Message: "Toolgate could not ask for this call (its database did not answer), so nothing ran; try again later."})
		case outcome.Refusal != nil:
			return refused(outcome.Refusal)
		}
		if v, out = f.admit(ctx, srv, call); out != nil {
			return out
		}
	}
	return f.carryOut(ctx, srv, call, v, start)
}

// holdHooks tell the client, while its call is held, that it still waits
// (progress notifications, when it sent a progress token) and, when it
// declared elicitation, ask the person in the client itself.
func (f *agentFace) holdHooks(mctx context.Context, req mcp.Request, p *mcp.CallToolParamsRaw) HoldHooks {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	var h HoldHooks
	if tok := p.GetProgressToken(); tok != nil && ss != nil {
		h.Progress = func(elapsed time.Duration, message string) {
			_ = ss.NotifyProgress(mctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: elapsed.Seconds(), Message: message})
		}
	}
	if ss != nil && ss.InitializeParams() != nil && ss.InitializeParams().Capabilities != nil && ss.InitializeParams().Capabilities.Elicitation != nil {
		h.Ask = func(ctx context.Context, id, message string) (AskAnswer, bool) {
			ectx, cancel := context.WithCancel(mctx)
			defer cancel()
			stop := context.AfterFunc(ctx, cancel)
			defer stop()
			return elicit(ectx, ss, message)
		}
	}
	return h
}

// elicit asks the person in their client: approve (a checkbox) and a
// reason.
func elicit(ctx context.Context, ss *mcp.ServerSession, message string) (AskAnswer, bool) {
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: message, RequestedSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "Run this call"},
			"reason":  map[string]any{"type": "string", "title": "Reason", "description": "Why (sent to the agent with a denial)"},
		},
		"required": []string{"approve"},
	}})
	if err != nil || res == nil || res.Action != "accept" {
		return AskAnswer{}, false
	}
	approve, ok := res.Content["approve"].(bool)
	if !ok {
		return AskAnswer{}, false
	}
	reason, _ := res.Content["reason"].(string)
	return AskAnswer{Approve: approve, Reason: reason}, true
}
