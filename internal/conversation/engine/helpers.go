package engine

import (
	"encoding/json"

	"github.com/toolgate/toolgate/internal/conversation"
)

// Names the engine's files use for helpers that live in the domain package.

func shownCorrection(stored json.RawMessage) json.RawMessage {
	return conversation.ShownCorrection(stored)
}

func joinPath(parent, key string) string { return conversation.JoinPath(parent, key) }

func sameJSON(a, b []byte) bool { return conversation.SameJSON(a, b) }

func jsonEqual(x, y any) bool { return conversation.JSONEqual(x, y) }

func lostPrevious(err error) bool { return conversation.LostPrevious(err) }
