// Package responses is Toolgate's client of the OpenAI Responses API (or a
// provider that speaks it): it renders the servers' policy groups as mcp
// tools, sends the person's decisions as mcp_approval_response items and
// turns the stream into conversation events. It is the only package that
// imports openai-go.
package responses

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolgate/toolgate/internal/conversation"
)

// The metadata keys every request carries: the Toolgate turn that sent it
// and its conversation.
const (
	MetadataTurn         = "toolgate_turn"
	MetadataConversation = "toolgate_conversation"
)

// Config configures a Client.
type Config struct {
	APIKey  string // "" leaves it to openai-go (OPENAI_API_KEY)
	BaseURL string // e.g. http://127.0.0.1:8091/v1/; "" is OpenAI (or OPENAI_BASE_URL)
	Model   string
	Layout  Layout // "" is LayoutDefault
	// MaxRetries bounds the retries of requests that may retry
	// (UpstreamRequest.Retry); others never retry.
	MaxRetries int
	// FirstByteTimeout ends a request when no event arrives within it of
	// sending the request (each attempt); IdleTimeout ends a stream when no
	// event arrives for it once the answer streams. 0 disables either.
	FirstByteTimeout time.Duration
	IdleTimeout      time.Duration
	// HTTPClient, when set, is used as is; nil builds one from Transport.
	HTTPClient *http.Client
	Transport  Transport
	// MaxTools bounds the tools entries of one request (0: MaxTools): a
	// request with more is refused before it is sent.
	MaxTools int
	Logger   *slog.Logger // nil discards
	// Face, when set, sends every tool call through Toolgate's MCP face
	// (MCP_ROUTE=gateway): entries name the face with a capability token
	// instead of the server's URL and headers (face.go). nil is direct.
	Face *Face
}

// Client sends responses.create requests; it implements conversation.Upstream.
type Client struct {
	sdk        openai.Client
	model      string
	layout     Layout
	maxRetries int
	firstByte  time.Duration
	idle       time.Duration
	maxTools   int
	tools      *toolCache // the entries of earlier requests, rendered
	face       *Face      // nil: direct
	log        *slog.Logger
}

var _ conversation.Upstream = (*Client)(nil)

// New returns a Client for cfg.
func New(cfg Config) *Client {
	var opts []option.RequestOption
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = NewHTTPClient(cfg.Transport)
	}
	opts = append(opts, option.WithHTTPClient(hc))
	c := &Client{
		sdk:        openai.NewClient(opts...),
		model:      cfg.Model,
		layout:     cfg.Layout,
		maxRetries: max(cfg.MaxRetries, 0),
		firstByte:  cfg.FirstByteTimeout,
		idle:       cfg.IdleTimeout,
		maxTools:   cfg.MaxTools,
		tools:      newToolCache(),
		face:       cfg.Face,
		log:        cfg.Logger,
	}
	if c.face != nil && c.face.Tokens == nil {
		panic("responses: a Face needs Tokens to mint capability tokens")
	}
	if c.maxTools <= 0 {
		c.maxTools = MaxTools
	}
	if c.layout == "" {
		c.layout = LayoutDefault
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Stream sends req as a streaming responses.create and waits for the first
// event, because openai-go reports HTTP errors only once the stream is read.
// The error, when nothing was streamed, is an *conversation.UpstreamError for
// an HTTP error answer (Code from the error body) or an unreachable
// provider (conversation.CodeUnreachable), a provider silent past the first-
// byte timeout (conversation.CodeFirstByteTimeout), or wraps ctx.Err(). ctx
// bounds the whole stream: cancelling it ends the stream.
func (c *Client) Stream(ctx context.Context, req conversation.UpstreamRequest) (conversation.EventStream, error) {
	// The tokens of a request sent again (by the transport, or a retry)
	// expire when the first one's do: the same bytes.
	at := time.Now()
	body, labels, err := c.bodyAt(req, at)
	if err != nil {
		return nil, err
	}
	retries := 0
	if req.Retry {
		retries = c.maxRetries
	}
	c.log.DebugContext(ctx, "responses.create", "previous_response_id", req.PreviousResponseID,
		"answers", len(req.Answers), "history", len(req.History), "user_text", req.UserText != "", "servers", len(req.Tools), "max_retries", retries)
	w := newWatchdog(ctx, c.firstByte, c.idle)
	// openai-go builds and sends the request; the answer's body is read
	// here (stream.go), not decoded into openai-go's event union.
	var httpRes *http.Response
	// openai-go gets an empty body (so that it may send the request
	// again); the middleware puts the pieces in its place (body.go).
	err = c.sdk.Post(w.ctx, "responses", []byte{}, &httpRes, option.WithMaxRetries(retries), option.WithMiddleware(w.middleware()),
		option.WithMiddleware(letGo(body, func() (pieces, error) { b, _, err := c.bodyAt(req, at); return b, err })))
	if err == nil {
		s := &eventStream{body: httpRes.Body, sse: newSSEReader(httpRes.Body), labels: labels.mapped(), w: w}
		data, ok := s.sse.next() // the first-byte timeout runs
		w.pause()
		if ok {
			s.first, s.hasFirst = s.convert(data)
			if s.err == nil {
				return s, nil
			}
			err = s.err
		} else if err = s.sse.err; err == nil {
			// An empty stream: the caller sees no terminal event.
			s.end(nil)
			return s, nil
		}
		s.closeBody()
	}
	w.pause()
	defer w.stop()
	if te := w.timedOut(); te != nil {
		return nil, te
	}
	err = requestError(ctx, err, httpRes)
	nameFailedServer(err, labels)
	return nil, err
}

// body builds the request's JSON: openai-go marshals its parameters but
// the tools, which are rendered (render.go, from the cache of entries
// already rendered) into the body, with "stream": true. A request with more
// tools entries than the provider accepts is refused (limits.go). Through
// the face, its tokens expire MCP_TOKEN_TTL after now.
func (c *Client) body(req conversation.UpstreamRequest) ([]byte, Labels, error) {
	p, labels, err := c.bodyAt(req, time.Now())
	return p.bytes(), labels, err
}

// bodyAt is the body in pieces: the cached entries are not copied into one
// buffer (1.4 MB a turn at 128 servers × 1,000 tools) but written from
// where they are.
func (c *Client) bodyAt(req conversation.UpstreamRequest, now time.Time) (pieces, Labels, error) {
	var face *faceRequest
	if c.face != nil && len(req.Tools) > 0 {
		var err error
		if face, err = c.face.request(req.ConversationID, req.TurnID, now); err != nil {
			return pieces{}, nil, err
		}
	}
	tools := renderVia(req.Tools, req.Answers, c.layout, c.tools, face)
	if err := c.checkSize(len(tools.entries)); err != nil {
		return pieces{}, nil, err
	}
	params, ok := c.appendParams(make([]byte, 0, 512+len(req.UserText)), req)
	if !ok {
		var err error
		if params, err = c.params(req).MarshalJSON(); err != nil {
			return pieces{}, nil, fmt.Errorf("responses: building the request: %w", err)
		}
	}
	params = bytes.TrimRight(params, " \t\r\n")
	if len(params) < 2 || params[len(params)-1] != '}' {
		return pieces{}, nil, fmt.Errorf("responses: building the request: the parameters are not a JSON object: %.40s", params)
	}
	params = params[:len(params)-1]
	sep := ","
	if len(bytes.TrimSpace(params)) == 1 { // {}
		sep = ""
	}
	var b pieces
	if len(tools.entries) > 0 {
		b.add(append(params, sep+`"tools":`...))
		tools.appendPieces(&b)
		sep = ","
	} else {
		b.add(params)
	}
	b.add([]byte(sep + `"stream":true}`))
	return b, tools.labels, nil
}

// params is the request without its tools.
func (c *Client) params(req conversation.UpstreamRequest) responses.ResponseNewParams {
	input := historyInput(req.History)
	for _, a := range req.Answers {
		item := responses.ResponseInputItemParamOfMcpApprovalResponse(a.ApprovalRequestID, a.Approve)
		if a.Reason != "" {
			item.OfMcpApprovalResponse.Reason = openai.String(a.Reason)
		}
		input = append(input, item)
	}
	if req.UserText != "" {
		msg := responses.ResponseInputItemParamOfMessage(req.UserText, responses.EasyInputMessageRoleUser)
		msg.OfMessage.Type = responses.EasyInputMessageTypeMessage // explicit for compatible providers
		input = append(input, msg)
	}
	p := responses.ResponseNewParams{
		Model: c.model,
		Store: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
	}
	if req.PreviousResponseID != "" {
		p.PreviousResponseID = openai.String(req.PreviousResponseID)
	}
	if req.TurnID != "" || req.ConversationID != "" {
		// Names the turn in the provider's stored response and logs.
		p.Metadata = shared.Metadata{MetadataTurn: req.TurnID, MetadataConversation: req.ConversationID}
	}
	return p
}

// requestError classifies the error of a request that streamed nothing.
func requestError(ctx context.Context, err error, res *http.Response) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("responses: request canceled: %w", ctxErr)
	}
	var ae *openai.Error
	if errors.As(err, &ae) {
		return upstreamError(ae.StatusCode, ae.Code, ae.Type, ae.Message)
	}
	if res != nil && res.StatusCode >= 400 {
		// An error answer whose body could not be read: openai-go returns
		// the read error instead of an *openai.Error.
		return upstreamError(res.StatusCode, "", "", "")
	}
	if res == nil {
		// No HTTP answer: refused, DNS, TLS, but also a connection that
		// ended before the answer's headers (the request may have arrived).
		return &conversation.UpstreamError{Code: conversation.CodeUnreachable, Message: err.Error(), MaybeDelivered: !neverSent(err)}
	}
	return fmt.Errorf("responses: the stream ended before its first event: %w", err)
}

func upstreamError(status int, code, typ, msg string) *conversation.UpstreamError {
	if code == "" || typ == conversation.ProviderCodeInsufficientQuota {
		code = typ
	}
	if code == "" {
		code = "http_" + strconv.Itoa(status)
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &conversation.UpstreamError{Status: status, Code: code, Message: msg}
}

// neverSent reports whether err happened before the request could be sent:
// no connection was made (refused, DNS, TLS).
func neverSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	var tlsErr *tls.CertificateVerificationError
	return errors.As(err, &dns) || errors.As(err, &tlsErr)
}
