package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/faults"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/redact"
)

// Face-side refusal codes: the face refuses these before asking the Gate
// (nothing was recorded, nothing ran).
const (
	// The call's arguments are not one JSON object.
	RefusedInvalidArguments = "invalid_arguments"
	// The real server could not be listed, so the call could not be checked.
	RefusedUnreachable = "server_unreachable"
	// An identical call of this turn is still running and its result did
	// not come while this request waited.
	RefusedPending = "pending"
)

// RefusalMetaKey is the _meta key of a refused call's result that holds
// the refusal code, for clients that act on it.
const RefusalMetaKey = "toolgate/refusal"

// gateTimeout bounds one question to the Gate. The Gate is asked on a
// context detached from the request: once a call is admitted, a client
// that hangs up must not leave it admitted but never forwarded or
// recorded.
const gateTimeout = 15 * time.Second

// callTool checks one tools/call with the Gate and forwards it when it
// runs. It always answers with a tool result: a refusal is a result with
// isError and a sentence the model and the person can act on.
func (f *face) callTool(ctx context.Context, fr *faceRequest, p *mcp.CallToolParamsRaw) *mcp.CallToolResult {
	start := time.Now()
	if p == nil || p.Name == "" {
		return refused(&Refusal{Code: RefusedUnknownTool, Message: "The call names no tool; nothing ran."})
	}
	call, out := f.prepare(ctx, fr.server, fr.claims, p.Name, p.Name, p.Arguments)
	if out != nil {
		return out
	}
	v, out := f.admit(ctx, fr.server, call)
	if out != nil {
		return out
	}
	return f.carryOut(ctx, fr.server, call, v, start)
}

// prepare is the part of a call's check that needs no Gate: its arguments
// are one JSON object (made canonical), and the real server lists its
// tools (name is the tool's name there; shown is the name the client
// used). A refusal is returned as the result to answer with.
func (f *face) prepare(ctx context.Context, srv policy.Server, claims Claims, name, shown string, args json.RawMessage) (Call, *mcp.CallToolResult) {
	canonical, sha, err := ArgumentsDigest(args)
	if err != nil {
		return Call{}, refused(&Refusal{Code: RefusedInvalidArguments,
			Message: fmt.Sprintf("The arguments of %s are not valid: %v. Send one JSON object; nothing ran.", shown, err)})
	}
	tools, listedAt, err := f.defs.fresh(ctx, srv, f.maxAge)
	if err != nil {
		f.log.WarnContext(ctx, "mcp face: could not list the server to check a call", "server", srv.Label, "tool", name, "error", err)
		return Call{}, refused(&Refusal{Code: RefusedUnreachable, Message: fmt.Sprintf(
			"Toolgate could not list the tools of %s to check this call, so nothing ran: %s", srv.Label, scrub(srv, errText(err)))})
	}
	return Call{Claims: claims, ToolName: name, Arguments: canonical, ArgumentsSHA256: sha, Definition: find(tools, name), ListedAt: listedAt}, nil
}

// admit asks the Gate about call; an error is answered as a refusal
// (nothing ran).
func (f *face) admit(ctx context.Context, srv policy.Server, call Call) (Verdict, *mcp.CallToolResult) {
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), gateTimeout)
	defer cancel()
	v, err := f.gate.Admit(gctx, call)
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			return v, refused(ref)
		}
		f.log.ErrorContext(ctx, "mcp face: the gate could not decide on a call", "server", srv.Label, "tool", call.ToolName, "error", err)
		return v, refused(&Refusal{Code: RefusedUnavailable,
			Message: "Toolgate could not check this call (its database did not answer), so nothing ran; try again later."})
	}
	return v, nil
}

// carryOut does what the Gate's verdict on call says: refuse it, answer
// with the stored result of an identical call, wait for one, or forward it
// and record its result.
func (f *face) carryOut(ctx context.Context, srv policy.Server, call Call, v Verdict, start time.Time) *mcp.CallToolResult {
	attrs := []any{"server", srv.Label, "tool", call.ToolName, "call_id", v.CallID, "conversation_id", call.Claims.ConversationID}
	switch {
	case v.Refusal != nil:
		f.log.InfoContext(ctx, "mcp face: call refused", append(attrs, "code", v.Refusal.Code)...)
		return refused(v.Refusal)
	case v.Stored != nil:
		f.log.InfoContext(ctx, "mcp face: call answered with the stored result of an identical call", attrs...)
		out, _ := masked(srv, *v.Stored)
		return rendered(out)
	case v.Pending:
		r, err := f.gate.Await(ctx, v.CallID)
		if err != nil {
			f.log.WarnContext(ctx, "mcp face: gave up waiting for an identical call", append(attrs, "error", err)...)
			return refused(&Refusal{Code: RefusedPending, Message: "An identical call is still running; its result is not known yet. Do not call again: its result will be recorded."})
		}
		out, _ := masked(srv, r)
		return rendered(out)
	case v.Run:
		// Forwarded whatever the client does now: the call is admitted, so
		// its result must be recorded.
		res := f.upstream.CallTool(context.WithoutCancel(ctx), srv.URL, srv.Headers, call.ToolName, call.Arguments)
		faults.Crash(faults.GatewayAfterForward)
		res.Failure = scrub(srv, res.Failure)
		// The gate stores the result as the server sent it (and digests
		// it); the provider gets it masked.
		out, n := masked(srv, res)
		res.Masked = n
		// A context of its own: the call may have outlasted gctx.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), gateTimeout)
		defer cancel()
		if err := f.gate.Finish(fctx, v.CallID, res); err != nil {
			f.log.ErrorContext(ctx, "mcp face: could not record a call's result", append(attrs, "error", err)...)
		}
		f.log.InfoContext(ctx, "mcp face: call forwarded", append(attrs, "allowed_by", v.AllowedBy, "is_error", res.IsError,
			"not_run", res.NotRun, "masked", n, "duration", time.Since(start))...)
		return rendered(out)
	}
	// A verdict that neither runs nor refuses: fail closed.
	f.log.ErrorContext(ctx, "mcp face: the gate's verdict neither runs nor refuses the call", attrs...)
	return refused(&Refusal{Code: RefusedUnavailable, Message: "Toolgate could not decide on this call, so nothing ran."})
}

// listTools answers tools/list with the tools the caller may see.
func (f *face) listTools(ctx context.Context, fr *faceRequest) (*mcp.ListToolsResult, error) {
	tools, err := f.defs.forList(ctx, fr.server, f.maxAge)
	if err != nil {
		f.log.WarnContext(ctx, "mcp face: could not list the server", "server", fr.server.Label, "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("Toolgate could not list the tools of %s: %s", fr.server.Label, scrub(fr.server, errText(err)))}
	}
	visible, err := f.gate.Listed(ctx, fr.claims, tools)
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: ref.Message}
		}
		f.log.ErrorContext(ctx, "mcp face: the gate could not record a listing", "server", fr.server.Label, "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "Toolgate could not check which tools you may see (its database did not answer); try again later"}
	}
	// The listing is this conversation owner's (blocked tools left out): a
	// client may cache it for this caller only, and should not rely on it
	// (a policy can change at any time). Set here, since the face answers
	// tools/list itself: an empty cacheScope is invalid on the wire (the
	// OpenAI Agents SDK's MCP client refuses it).
	out := &mcp.ListToolsResult{Tools: make([]*mcp.Tool, 0, len(visible)),
		Cacheable: mcp.Cacheable{TTLMs: 0, CacheScope: "private"}}
	for _, t := range visible {
		out.Tools = append(out.Tools, toMCP(t))
	}
	return out, nil
}

func find(tools []policy.DiscoveredTool, name string) *policy.DiscoveredTool {
	for i := range tools {
		if tools[i].Name == name {
			t := tools[i]
			return &t
		}
	}
	return nil
}

// toMCP is a listed tool as the face shows it.
func toMCP(t policy.DiscoveredTool) *mcp.Tool {
	tool := &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: json.RawMessage(t.InputSchema)}
	if len(t.InputSchema) == 0 {
		tool.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	a := t.Annotations
	if a.Title != "" || a.ReadOnlyHint != nil || a.DestructiveHint != nil || a.IdempotentHint != nil || a.OpenWorldHint != nil {
		tool.Annotations = &mcp.ToolAnnotations{Title: a.Title, DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint}
		if a.ReadOnlyHint != nil {
			tool.Annotations.ReadOnlyHint = *a.ReadOnlyHint
		}
		if a.IdempotentHint != nil {
			tool.Annotations.IdempotentHint = *a.IdempotentHint
		}
	}
	return tool
}

// masked is r as the provider may read it: the credentials in every string
// of the server's result (and in the failure's text) masked, with how many
// were; r as it is, and nil, when the server's mask_results is off. A
// result that is not JSON is left to rendered, which does not pass it on.
func masked(srv policy.Server, r Result) (Result, *int) {
	if srv.UnmaskedResults {
		return r, nil
	}
	n := 0
	if len(r.JSON) > 0 {
		if out, k, err := redact.Values(r.JSON); err == nil {
			r.JSON, n = out, k
		}
	}
	var k int
	r.Failure, k = redact.Text(r.Failure)
	n += k
	return r, &n
}

// refused is a refusal as a tool result.
func refused(r *Refusal) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: r.Message}},
		Meta: mcp.Meta{RefusalMetaKey: r.Code}}
}

// rendered is a call's result as the client gets it: the server's own
// result when it answered, else a sentence saying what happened.
func rendered(r Result) *mcp.CallToolResult {
	if len(r.JSON) > 0 {
		var out mcp.CallToolResult
		if err := json.Unmarshal(r.JSON, &out); err == nil {
			if out.Content == nil {
				out.Content = []mcp.Content{}
			}
			return &out
		}
		return errorResult("The server answered, but its result is not a valid MCP tool result.")
	}
	failure := r.Failure
	if failure == "" {
		failure = "no result came back"
	}
	if r.NotRun {
		return errorResult("The call was not sent to the server, so it did not run: " + failure)
	}
	return errorResult("The call was sent to the server but no result came back, so it may have run: " + failure)
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// errText is an error's sentence for a client: an apperr's message (not
// its cause), else the text.
func errText(err error) string {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	return err.Error()
}

// scrub hides the server's real URL, host and stored header values in a
// text the face sends out: they never leave Toolgate.
func scrub(srv policy.Server, text string) string {
	if text == "" {
		return text
	}
	secrets := []string{srv.URL, policy.MaskURL(srv.URL)}
	if u, err := url.Parse(srv.URL); err == nil {
		secrets = append(secrets, u.Host, u.Hostname())
	}
	for _, v := range srv.Headers {
		secrets = append(secrets, v)
		if _, tok, ok := strings.Cut(v, " "); ok { // "Bearer abc": abc alone too
			secrets = append(secrets, tok)
		}
	}
	for _, s := range secrets {
		if len(s) >= 3 {
			text = strings.ReplaceAll(text, s, "[hidden]")
		}
	}
	return text
}
