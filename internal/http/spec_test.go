package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// Every answer an API under test gives is checked against docs/openapi.yaml:
// the status must be documented for the operation, and the body must match
// the schema of that status and content type. A mismatch fails the test that
// sent the request. Only event streams go unread (their status and content
// type are still checked), and paths outside /api (the web app's files).
//
// The check sits in http.DefaultClient's transport, which every request
// helper and the tests' own raw requests use, and reports to the test whose
// API the request went to (specWatch).

// loadSpec reads and validates docs/openapi.yaml once per test binary.
var loadSpec = sync.OnceValues(func() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("../../docs/openapi.yaml")
	if err != nil {
		return nil, fmt.Errorf("load docs/openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	return doc, nil
})

// specWatchers maps an API's host:port to the test that owns it.
var specWatchers sync.Map

// specWatch reports every mismatch of an answer from the API at base to t,
// until t's cleanup.
func specWatch(t testing.TB, base string) {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	if _, loaded := specWatchers.LoadOrStore(u.Host, t); !loaded {
		t.Cleanup(func() { specWatchers.Delete(u.Host) })
	}
}

func init() {
	http.DefaultClient.Transport = specTransport{}
}

// specTransport checks the answers of watched APIs and passes everything
// else through unchanged.
type specTransport struct{}

func (specTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	w, watched := specWatchers.Load(req.URL.Host)
	if err != nil || !watched || !specCovers(req.URL.Path) {
		return res, err
	}
	t := w.(testing.TB)
	if isEventStream(res.Header) {
		if err := checkResponse(req, res.StatusCode, res.Header, nil); err != nil {
			t.Errorf("%v", err)
		}
		return res, nil
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	if err := checkResponse(req, res.StatusCode, res.Header, body); err != nil {
		t.Errorf("%v", err)
	}
	return res, nil
}

// specCovers says whether the spec describes path's answers.
func specCovers(path string) bool {
	return strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/mcp/") || path == "/healthz" || path == "/readyz"
}

func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// checkResponse says how an answer to req breaks the spec, naming the route,
// the status and the schema error; nil when it does not. body is not read
// for event streams.
func checkResponse(req *http.Request, status int, header http.Header, body []byte) error {
	doc, err := loadSpec()
	if err != nil {
		return err
	}
	route := findRoute(doc, req.Method, req.URL.EscapedPath())
	if route == nil {
		return checkUnrouted(doc, req, status, header, body)
	}
	name := fmt.Sprintf("%s %s (%s %s) answered %d", req.Method, req.URL.EscapedPath(), route.Method, route.Path, status)
	resp := route.Operation.Responses.Status(status)
	if resp == nil {
		resp = route.Operation.Responses.Default()
	}
	if resp == nil || resp.Value == nil {
		return fmt.Errorf("%s: docs/openapi.yaml documents no %d for this operation; body: %.300s", name, status, body)
	}
	ct := header.Get("Content-Type")
	if len(resp.Value.Content) == 0 {
		if len(body) > 0 {
			return fmt.Errorf("%s: docs/openapi.yaml documents no body for %d, got %q: %.300s", name, status, ct, body)
		}
		return nil
	}
	if resp.Value.Content.Get(ct) == nil {
		return fmt.Errorf("%s: content type %q is not documented for %d (documented: %v)", name, ct, status, contentTypes(resp.Value.Content))
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: isEventStream(header)},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s does not match docs/openapi.yaml: %w\nbody: %.500s", name, err, body)
	}
	return nil
}

// checkUnrouted checks an answer to a path or method the spec does not
// describe: it can only be an error, in the one error shape.
func checkUnrouted(doc *openapi3.T, req *http.Request, status int, header http.Header, body []byte) error {
	name := fmt.Sprintf("%s %s (no operation in docs/openapi.yaml) answered %d", req.Method, req.URL.EscapedPath(), status)
	if status < 400 {
		return fmt.Errorf("%s: only an error may answer a request the spec does not describe; body: %.300s", name, body)
	}
	if mt, _, _ := mime.ParseMediaType(header.Get("Content-Type")); mt != "application/json" {
		return fmt.Errorf("%s: content type %q, want application/json", name, header.Get("Content-Type"))
	}
	schema := doc.Components.Schemas["Error"]
	v, err := decodeJSON(body)
	if err == nil {
		err = schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse(), openapi3.MultiErrors())
	}
	if err != nil {
		return fmt.Errorf("%s: body does not match schema Error: %w\nbody: %.500s", name, err, body)
	}
	return nil
}

// findRoute finds the operation for method and an escaped path as Echo
// does: a literal segment wins over a parameter.
func findRoute(doc *openapi3.T, method, escapedPath string) *routers.Route {
	segs := strings.Split(escapedPath, "/")
	var best *routers.Route
	bestLiterals := -1
	for path, item := range doc.Paths.Map() {
		tmpl := strings.Split(path, "/")
		if len(tmpl) != len(segs) {
			continue
		}
		literals := 0
		for i, s := range tmpl {
			if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
				if segs[i] == "" {
					literals = -1
					break
				}
				continue
			}
			if s != segs[i] {
				literals = -1
				break
			}
			literals++
		}
		op := item.GetOperation(method)
		if literals > bestLiterals && op != nil {
			best, bestLiterals = &routers.Route{Spec: doc, Path: path, PathItem: item, Method: method, Operation: op}, literals
		}
	}
	return best
}

func decodeJSON(body []byte) (any, error) {
	var v any
	err := json.Unmarshal(body, &v)
	return v, err
}

func contentTypes(c openapi3.Content) []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}
