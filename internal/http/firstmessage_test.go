package http_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// streamedUserMessage is the user_message item a turn's stream announced.
func streamedUserMessage(t *testing.T, s stream) map[string]any {
	t.Helper()
	for _, ev := range s.events {
		var x struct {
			Item map[string]any `json:"item"`
		}
		if ev.Name == "item.done" && json.Unmarshal(ev.Data, &x) == nil && x.Item["type"] == "user_message" {
			return x.Item
		}
	}
	t.Fatalf("no user_message item in the stream: %+v", s.events)
	return nil
}

// TestChat_TheMessageStreamedIsTheOneStored: a new conversation's first
// message is written in the batch that carries the turn's opening and its
// COMMIT, with its place and time decided before it is sent (one round
// trip); the item the stream announces must still be the transcript's,
// field for field, and the conversation as listed must hold it, then the
// next message after it.
func TestChat_TheMessageStreamedIsTheOneStored(t *testing.T) {
	e := newAPI(t)
	began := time.Now()
	first := e.send("", "hello there").ok(t)
	conv := first.conv(t)
	next := e.send(conv, "and again").ok(t)
	var tr struct {
		Conversation struct {
			Title     string    `json:"title"`
			CreatedAt time.Time `json:"created_at"`
		} `json:"conversation"`
		Items []map[string]any `json:"items"`
	}
	e.must(200, "GET", "/api/conversations/"+conv, nil, &tr)
	var stored []map[string]any
	for _, it := range tr.Items {
		if it["type"] == "user_message" {
			stored = append(stored, it)
		}
	}
	if len(stored) != 2 {
		t.Fatalf("the transcript holds %d user messages, want 2: %+v", len(stored), tr.Items)
	}
	for i, s := range []stream{first, next} {
		if got := streamedUserMessage(t, s); !reflect.DeepEqual(got, stored[i]) {
			t.Errorf("message %d: streamed %v, stored %v", i+1, got, stored[i])
		}
	}
	if stored[0]["seq"] != 1.0 || stored[0]["text"] != "hello there" {
		t.Errorf("the first message is %v, want seq 1 with its text", stored[0])
	}
	if tr.Conversation.Title != "hello there" || tr.Conversation.CreatedAt.Before(began.Add(-time.Minute)) || tr.Conversation.CreatedAt.After(time.Now().Add(time.Minute)) {
		t.Errorf("conversation %+v: want titled by its first message, created now", tr.Conversation)
	}
}
