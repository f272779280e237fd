package emulator

import (
	"bytes"
	"encoding/json"
	"sort"
)

// knownParams are the body parameters of CreateResponse in OpenAI's OpenAPI
// description. Like the real API, the emulator rejects any other key.
var knownParams = map[string]bool{
	"background": true, "context_management": true, "conversation": true, "include": true,
	"input": true, "instructions": true, "max_output_tokens": true, "max_tool_calls": true,
	"metadata": true, "model": true, "moderation": true, "parallel_tool_calls": true,
	"previous_response_id": true, "prompt": true, "prompt_cache_key": true,
	"prompt_cache_options": true, "prompt_cache_retention": true, "reasoning": true,
	"safety_identifier": true, "service_tier": true, "store": true, "stream": true,
	"stream_options": true, "temperature": true, "text": true, "tool_choice": true,
	"tools": true, "top_logprobs": true, "top_p": true, "truncation": true, "user": true,
}

// request is a parsed, validated POST /v1/responses body.
type request struct {
	Model              string
	Stream             bool
	Store              bool
	PreviousResponseID string
	Instructions       *string
	Metadata           map[string]string
	ParallelToolCalls  bool
	Tools              []mcpTool
	Input              []ctxItem
}

func parseRequest(body []byte) (*request, *apiError) {
	top, e := parseTop(body)
	if e != nil {
		return nil, e
	}
	r := &request{Store: true, ParallelToolCalls: true}
	if e := r.parseSettings(top); e != nil {
		return nil, e
	}
	if e := r.parseRefused(top); e != nil {
		return nil, e
	}
	if raw, ok := top["tools"]; ok && !isNull(raw) {
		tools, e := parseTools(raw)
		if e != nil {
			return nil, e
		}
		r.Tools = tools
	}
	if raw, ok := top["input"]; ok && !isNull(raw) {
		in, e := parseInput(raw)
		if e != nil {
			return nil, e
		}
		r.Input = in
	}
	if len(r.Input) == 0 && r.PreviousResponseID == "" {
		return nil, missingParam("input")
	}
	return r, nil
}

// parseTop reads the body as a JSON object of known parameters.
func parseTop(body []byte) (map[string]json.RawMessage, *apiError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, invalid("", "", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, invalid("", "", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)")
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !knownParams[k] {
			return nil, invalid(k, "unknown_parameter", "Unknown parameter: '%s'.", k)
		}
	}
	return top, nil
}

// parseSettings reads the model, the switches, the previous response, the
// instructions and the metadata.
func (r *request) parseSettings(top map[string]json.RawMessage) *apiError {
	if e := str(top, "", "model", &r.Model); e != nil {
		return e
	}
	if r.Model == "" {
		return missingParam("model")
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{{"stream", &r.Stream}, {"store", &r.Store}, {"parallel_tool_calls", &r.ParallelToolCalls}} {
		if raw, ok := top[b.key]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, b.dst); err != nil {
				return invalidType(b.key, "a boolean")
			}
		}
	}
	if e := str(top, "", "previous_response_id", &r.PreviousResponseID); e != nil {
		return e
	}
	if raw, ok := top["instructions"]; ok && !isNull(raw) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			r.Instructions = &s
		}
	}
	if raw, ok := top["metadata"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &r.Metadata); err != nil {
			return invalidType("metadata", "an object with string values")
		}
	}
	return nil
}

// parseRefused refuses the parameters the emulator does not support.
func (r *request) parseRefused(top map[string]json.RawMessage) *apiError {
	if raw, ok := top["conversation"]; ok && !isNull(raw) {
		return invalid("conversation", "", "The Toolgate emulator does not support 'conversation'; chain responses with 'previous_response_id'.")
	}
	if raw, ok := top["background"]; ok && string(raw) == "true" {
		return invalid("background", "", "The Toolgate emulator does not support background responses.")
	}
	return nil
}

// str reads an optional string field (null counts as absent).
func str(m map[string]json.RawMessage, p, key string, dst *string) *apiError {
	raw, ok := m[key]
	if !ok || isNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		if p != "" {
			key = p + "." + key
		}
		return invalidType(key, "a string")
	}
	return nil
}

// req reads a required string field of an input item.
func req(m map[string]json.RawMessage, p, key string, dst *string) *apiError {
	raw, ok := m[key]
	if !ok || isNull(raw) {
		return missingParam(p + "." + key)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return invalidType(p+"."+key, "a string")
	}
	if *dst == "" {
		return invalid(p+"."+key, "empty_string", "Invalid '%s.%s': empty string. Expected a string with minimum length 1.", p, key)
	}
	return nil
}

func firstErr(errs ...*apiError) *apiError {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
