package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpConn is the emulator's MCP client for one server during one turn: one
// session, opened on first use, that lists and calls tools, sending the tool
// entry's headers (and authorization as a bearer token) on every request.
type mcpConn struct {
	tool    mcpTool
	timeout time.Duration
	status  *statusRecorder
	session *mcp.ClientSession
	err     error
	once    sync.Once
}

func newMCPConn(t mcpTool, timeout time.Duration) *mcpConn {
	return &mcpConn{tool: t, timeout: timeout, status: &statusRecorder{}}
}

func (c *mcpConn) connect(ctx context.Context) (*mcp.ClientSession, error) {
	c.once.Do(func() {
		hdr := http.Header{}
		for k, v := range c.tool.Headers {
			hdr.Set(k, v)
		}
		if c.tool.Authorization != "" {
			hdr.Set("Authorization", "Bearer "+c.tool.Authorization)
		}
		c.status.base = http.DefaultTransport
		c.status.headers = hdr
		transport := &mcp.StreamableClientTransport{
			Endpoint:             c.tool.URL,
			HTTPClient:           &http.Client{Transport: c.status, Timeout: c.timeout},
			DisableStandaloneSSE: true,
			MaxRetries:           -1,
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "openai-mcp", Version: "1.0.0"}, nil)
		cctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		c.session, c.err = client.Connect(cctx, transport, nil)
	})
	return c.session, c.err
}

func (c *mcpConn) close() {
	if c.session != nil {
		_ = c.session.Close()
	}
}

// list runs tools/list (all pages) and renders the tools as the API does.
func (c *mcpConn) list(ctx context.Context) ([]ListedTool, error) {
	s, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	tools := []ListedTool{}
	params := &mcp.ListToolsParams{}
	for range 100 {
		res, err := s.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			schema := json.RawMessage(`{"type":"object","properties":{}}`)
			if t.InputSchema != nil {
				if b, err := json.Marshal(t.InputSchema); err == nil {
					schema = b
				}
			}
			lt := ListedTool{Name: t.Name, InputSchema: schema, Annotations: &ToolAnnotations{}}
			if t.Description != "" {
				d := t.Description
				lt.Description = &d
			}
			if t.Annotations != nil {
				lt.Annotations.ReadOnly = t.Annotations.ReadOnlyHint
			}
			tools = append(tools, lt)
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	return nil, errors.New("the server kept returning more pages of tools")
}

// call runs tools/call. It returns the output text, or the error object the
// API puts in mcp_call.error. Text content is the text (blocks joined by a
// newline); a result with other content too (an image, audio, a resource)
// is the JSON of its whole content list as MCP sent it
// ([{"type":"text",…},{"type":"image","data":"<base64>","mimeType":"image/png"}]),
// so a client can show an image.
//
// The arguments go to the server as the model wrote them (json.RawMessage),
// not decoded and encoded again: a number such as 12345678901234567890
// must arrive as written, so that the server (or a gateway that matches a
// call to an approval by its arguments) sees the call the model made.
func (c *mcpConn) call(ctx context.Context, name, arguments string) (string, *CallError) {
	var args any // nil: none (the SDK sends {})
	if strings.TrimSpace(arguments) != "" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(arguments), &obj); err != nil {
			return "", protocolError(-32602, "Invalid arguments: "+err.Error())
		}
		if obj != nil { // null is none
			args = json.RawMessage(arguments)
		}
	}
	s, err := c.connect(ctx)
	if err != nil {
		return "", c.transportError(err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return "", protocolError(int(we.Code), we.Message)
		}
		return "", c.transportError(err)
	}
	var texts []string
	var blocks []ContentBlock
	onlyText := true
	for _, ct := range res.Content {
		if t, ok := ct.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
			blocks = append(blocks, ContentBlock{Type: "text", Text: t.Text})
		} else {
			onlyText = false
		}
	}
	if res.IsError {
		if blocks == nil {
			blocks = []ContentBlock{}
		}
		return "", &CallError{Type: "mcp_tool_execution_error", Content: blocks}
	}
	if !onlyText {
		if b, err := json.Marshal(res.Content); err == nil {
			return string(b), nil
		}
	}
	out := strings.Join(texts, "\n")
	if out == "" && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			out = string(b)
		}
	}
	return out, nil
}

// transportError renders a failure below MCP: an HTTP status the server
// answered with, or no answer at all.
func (c *mcpConn) transportError(err error) *CallError {
	if code := c.status.last(); code != 0 {
		return httpError(code, fmt.Sprintf("%d %s", code, http.StatusText(code)))
	}
	return httpError(http.StatusBadGateway, "Could not reach the MCP server: "+rootMessage(err))
}

func protocolError(code int, msg string) *CallError {
	return &CallError{Type: "mcp_protocol_error", Code: &code, Message: msg}
}

func httpError(code int, msg string) *CallError {
	return &CallError{Type: "http_error", Code: &code, Message: msg}
}

// listFailure is the 424 the real API answers when it cannot list a
// server's tools.
func (c *mcpConn) listFailure(err error) *apiError {
	code := c.status.last()
	detail := fmt.Sprintf("Http status code: %d (%s)", http.StatusFailedDependency, http.StatusText(http.StatusFailedDependency))
	if code != 0 {
		detail = fmt.Sprintf("Http status code: %d (%s)", code, http.StatusText(code))
	} else if err != nil {
		detail = rootMessage(err)
	}
	return &apiError{
		Status:  http.StatusFailedDependency,
		Type:    "external_connector_error",
		Param:   strp("tools"),
		Code:    strp("http_error"),
		Message: fmt.Sprintf("Error retrieving tool list from MCP server: '%s'. %s", c.tool.Label, detail),
	}
}

func rootMessage(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// statusRecorder adds the entry's headers to every MCP request and
// remembers the last HTTP error status the server answered with.
type statusRecorder struct {
	base    http.RoundTripper
	headers http.Header
	mu      sync.Mutex
	code    int
}

func (s *statusRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range s.headers {
		r.Header[k] = vs
	}
	resp, err := s.base.RoundTrip(r)
	if err == nil && resp.StatusCode >= 400 && !(r.Method == http.MethodDelete) {
		s.mu.Lock()
		s.code = resp.StatusCode
		s.mu.Unlock()
	}
	return resp, err
}

func (s *statusRecorder) last() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code
}
