package termchat

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate/internal/client"
)

// Event is one server-sent event of a turn's stream.
type Event = client.Event

// newClient is a client of the Toolgate at base signed in with token. base
// was checked to be an http(s) URL.
func newClient(base, token string) *client.Client {
	c, err := client.New(base, token)
	if err != nil {
		panic(fmt.Sprintf("termchat: %v", err)) // Run checked the URL
	}
	return c
}

// conversationState is what GET /api/conversations/{id} says, with its
// pending approval requests decoded for the cards.
type conversationState struct {
	client.ConversationState
	PendingApprovals []approval
}

func conversation(ctx context.Context, c *client.Client, id string) (conversationState, error) {
	st, err := c.Conversation(ctx, id)
	if err != nil {
		return conversationState{}, err
	}
	out := conversationState{ConversationState: st}
	for _, raw := range st.PendingApprovals {
		var a approval
		if err := json.Unmarshal(raw, &a); err != nil {
			return conversationState{}, fmt.Errorf("GET /api/conversations/%s: a pending approval request: %w", id, err)
		}
		out.PendingApprovals = append(out.PendingApprovals, a)
	}
	return out, nil
}
