package http_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestSpec_DocumentIsValid fails when kin-openapi does not accept
// docs/openapi.yaml (its schemas, references and examples).
func TestSpec_DocumentIsValid(t *testing.T) {
	if _, err := loadSpec(); err != nil {
		t.Fatal(err)
	}
}

// TestSpec_ReportsAnswersThatBreakTheContract feeds checkResponse answers
// the spec does not allow, and one it does.
func TestSpec_ReportsAnswersThatBreakTheContract(t *testing.T) {
	const me = `{"id":"usr_5f0c2a9e1b7d3c4a6e8f0a1b","email":"ana@example.com","role":"admin"}`
	for _, tc := range []struct {
		name, method, path string
		status             int
		contentType, body  string
		want               string // "" for an answer that matches
	}{
		{"valid", "GET", "/api/auth/me", 200, "application/json", me, ""},
		{"missing required field", "GET", "/api/auth/me", 200, "application/json",
			`{"id":"usr_5f0c2a9e1b7d3c4a6e8f0a1b","email":"ana@example.com"}`, `GET /api/auth/me (GET /api/auth/me) answered 200 does not match`},
		{"value outside the enum", "GET", "/api/auth/me", 200, "application/json",
			strings.Replace(me, `"admin"`, `"owner"`, 1), "role"},
		{"undocumented status", "GET", "/api/auth/me", 418, "application/json", `{}`, "documents no 418"},
		{"undocumented content type", "GET", "/api/auth/me", 200, "text/html", "<p>hi</p>", `content type "text/html" is not documented`},
		{"error without its code", "GET", "/api/auth/me", 401, "application/json", `{"error":{"message":"no"}}`, "code"},
		{"body where none is documented", "DELETE", "/api/tokens/tok_1", 204, "application/json", `{}`, "documents no body"},
		{"stream answered as JSON", "POST", "/api/responses", 200, "application/json", `{}`, `content type "application/json" is not documented`},
		{"stream", "POST", "/api/responses", 200, "text/event-stream", "", ""},
		{"success on an undescribed route", "GET", "/api/nope", 200, "application/json", `{}`, "only an error may answer"},
		{"undescribed route, malformed error", "GET", "/api/nope", 404, "application/json", `{"message":"no"}`, "schema Error"},
		{"undescribed route, error", "GET", "/api/nope", 404, "application/json", `{"error":{"code":"route_not_found","message":"no"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, nil)
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			err := checkResponse(req, tc.status, http.Header{"Content-Type": {tc.contentType}}, body)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("reported a valid answer: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("did not report it, want an error with %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("error %q\ndoes not say %q", err, tc.want)
			}
		})
	}
}

// TestSpec_FailsTheTestThatGotTheAnswer checks the wiring: an answer from a
// watched API that breaks the contract is reported to the test that owns
// that API, through the client every helper uses.
func TestSpec_FailsTheTestThatGotTheAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"usr_5f0c2a9e1b7d3c4a6e8f0a1b","email":"ana@example.com"}`) // no role
	}))
	defer srv.Close()
	rec := &recordingTB{TB: t}
	specWatch(rec, srv.URL)
	res, err := http.DefaultClient.Get(srv.URL + "/api/auth/me")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := rec.messages(); len(got) != 1 || !strings.Contains(got[0], "GET /api/auth/me") || !strings.Contains(got[0], "role") {
		t.Errorf("reported %q, want one error naming the route and the missing role", got)
	}
}

// recordingTB records errors instead of failing.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}
