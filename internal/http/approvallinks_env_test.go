package http_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/approvallink"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/postgres/linkdb"
	"github.com/toolgate/toolgate/internal/webhook"
)

// approvalLinks is the links' service as cmd/api wires it.
func approvalLinks(pool *pgxpool.Pool, chat *engine.Service, log *slog.Logger) *approvallink.Service {
	store := linkdb.New(pool)
	return approvallink.NewService(store, approvallink.ChatDecider{Engine: chat, Store: store}, chat.Keeper(), log)
}

// linkedHook is a webhook receiver whose deliveries carry links, sent by
// a dispatcher woken on NOTIFY as in cmd/api.
type linkedHook struct {
	r    *hookReceiver
	disp *webhook.Dispatcher
}

// newLinkedHook registers a receiver for approval.required and runs a
// dispatcher that mints links with a key of its own.
func (e *apiEnv) newLinkedHook(c webhook.Config) linkedHook {
	e.t.Helper()
	r := newReceiver(e.t)
	e.createHook(r, webhook.EventApprovalRequired)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	d := e.dispatcher("replica-links", c)
	d.Links = &approvallink.Minter{Key: key, Store: linkdb.New(e.pool)}
	e.wakeOnNotify(d)
	run(e.t, d)
	return linkedHook{r: r, disp: d}
}

// link is one link of a payload: the request its path names and its token.
type link struct{ id, token string }

func parseLink(t testing.TB, raw string) link {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	id, ok := strings.CutPrefix(u.Path, "/link/")
	if !ok || u.Fragment == "" || u.RawQuery != "" {
		t.Fatalf("link %q is not /link/{id}#{token}", raw)
	}
	return link{id: id, token: u.Fragment}
}

// linksFor waits for the approval.required delivery of request id and
// returns its approve and deny links.
func (h linkedHook) linksFor(t testing.TB, id string) (approve, deny link, p webhook.Payload) {
	t.Helper()
	got := h.r.waitFor(1, func(c hookCall) bool { return c.Payload.Data["approval_request_id"] == id })
	p = got[0].Payload
	return parseLink(t, p.ApproveURL), parseLink(t, p.DenyURL), p
}

func (l link) body(extra map[string]any) map[string]any {
	b := map[string]any{"approval_request_id": l.id, "token": l.token}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// linkAnswer is the JSON of both link routes.
type linkAnswer struct {
	Link struct {
		ID          string     `json:"id"`
		Decision    string     `json:"decision"`
		ExpiresAt   *time.Time `json:"expires_at"`
		UsedAt      *time.Time `json:"used_at"`
		PersonEmail string     `json:"person_email"`
	} `json:"link"`
	Approval approval `json:"approval"`
}

// approvalState reads the request's state from the database.
func (e *apiEnv) approvalState(id string) (state string, decidedBy *string) {
	e.t.Helper()
	if err := e.pool.QueryRow(context.Background(), `SELECT state, decided_by FROM approval_requests WHERE id = $1`, id).Scan(&state, &decidedBy); err != nil {
		e.t.Fatal(err)
	}
	return state, decidedBy
}

// toolCalls counts the calls of tool that reached the demo server.
func (e *apiEnv) toolCalls(tool string) int {
	n := 0
	for _, c := range e.demo.Calls() {
		if c.Tool == tool {
			n++
		}
	}
	return n
}

// errCode is the machine code of an error answer.
func errCode(t testing.TB, res response) string {
	t.Helper()
	var a apiError
	_ = json.Unmarshal(res.body, &a)
	return a.Error.Code
}

// waitTranscript polls the conversation until done holds (a follow-up
// runs in the background after a decision by link).
func (e *apiEnv) waitTranscript(conv string, done func(transcript) bool) transcript {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		tr := e.transcript(conv)
		if done(tr) {
			return tr
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the conversation did not get there: %+v", tr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lastText is the text of the transcript's last message.
func lastText(tr transcript) string {
	text := ""
	for _, it := range tr.Items {
		if it.Type == "message" {
			text = it.Text
		}
	}
	return text
}

// withToken is the env sending another bearer token.
func (e *apiEnv) withToken(tok string) *apiEnv {
	c := *e
	c.token = tok
	return &c
}
