package engine

import (
	"log/slog"

	"github.com/toolgate/toolgate/internal/conversation"
)

// asker puts a new approval request to what answers it besides a person
// (the decision hooks, the argument rules, the tool's own policy) and gives
// it its card: the tool's words and choices, its annotations, and the
// correction it may follow (autodecide.go, hookdecide.go, cardwords.go,
// corrects.go).
type asker struct {
	store    conversation.Store
	policies conversation.Policies
	log      *slog.Logger
}
