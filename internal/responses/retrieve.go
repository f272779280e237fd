package responses

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/conversation"
)

// storedWire is the part of a stored response Retrieve reads, from its raw
// JSON like the stream's items.
type storedWire struct {
	ID     string            `json:"id"`
	Status string            `json:"status"`
	Output []json.RawMessage `json:"output"`
	Tools  []struct {
		Type        string `json:"type"`
		ServerLabel string `json:"server_label"`
	} `json:"tools"`
}

// Retrieve reads a stored response back (GET /v1/responses/{id}) with its
// output items converted as the stream's are. Its server labels are mapped
// back from the tools it echoes: the split layout's suffixes are dropped.
// It never retries on its own: the caller decides whether to ask again.
func (c *Client) Retrieve(ctx context.Context, id string) (conversation.StoredResponse, error) {
	var httpRes *http.Response
	res, err := c.sdk.Responses.Get(ctx, id, responses.ResponseGetParams{}, option.WithMaxRetries(0), option.WithResponseInto(&httpRes))
	if err != nil {
		return conversation.StoredResponse{}, requestError(ctx, err, httpRes)
	}
	var w storedWire
	if err := json.Unmarshal([]byte(res.RawJSON()), &w); err != nil {
		return conversation.StoredResponse{}, fmt.Errorf("responses: reading stored response %s: %w", id, err)
	}
	labels := Labels{}
	for _, t := range w.Tools {
		if t.Type == "mcp" && c.layout == LayoutSplit {
			labels[t.ServerLabel] = strings.TrimSuffix(strings.TrimSuffix(t.ServerLabel, neverSuffix), alwaysSuffix)
		}
	}
	out := conversation.StoredResponse{ID: w.ID, Status: w.Status}
	for _, raw := range w.Output {
		if it, ok := labels.item(raw); ok {
			out.Output = append(out.Output, *it)
		}
	}
	return out, nil
}
