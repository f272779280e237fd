package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// apiError is an error in OpenAI's wire shape:
// {"error":{"message","type","param","code"}}.
type apiError struct {
	Status  int
	Message string
	Type    string
	Param   *string
	Code    *string
	Header  http.Header // extra headers, e.g. Retry-After
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Message) }

func (e *apiError) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}{Error: struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}{e.Message, e.Type, e.Param, e.Code}})
}

func strp(s string) *string { return &s }

// invalid is a 400 invalid_request_error. param and code may be "" for null.
func invalid(param, code, format string, args ...any) *apiError {
	e := &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: fmt.Sprintf(format, args...)}
	if param != "" {
		e.Param = strp(param)
	}
	if code != "" {
		e.Code = strp(code)
	}
	return e
}

func missingParam(param string) *apiError {
	return invalid(param, "missing_required_parameter", "Missing required parameter: '%s'.", param)
}

func invalidType(param, want string) *apiError {
	return invalid(param, "invalid_type", "Invalid type for '%s': expected %s.", param, want)
}

func invalidValue(param, got, supported string) *apiError {
	return invalid(param, "invalid_value", "Invalid value: '%s'. Supported values are: %s.", got, supported)
}

func writeAPIError(w http.ResponseWriter, e *apiError) {
	for k, vs := range e.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	b, _ := json.Marshal(e)
	_, _ = w.Write(append(b, '\n'))
}

// statusError is the error body the real API sends for a status fault.
func statusError(status int, retryAfter string) *apiError {
	e := &apiError{Status: status}
	switch {
	case status == http.StatusTooManyRequests:
		e.Type = "requests"
		e.Code = strp("rate_limit_exceeded")
		e.Message = "Rate limit reached for requests (emulated). Please try again in " + retryAfter + "s."
		e.Header = http.Header{"Retry-After": {retryAfter}}
	case status >= 500:
		e.Type = "server_error"
		e.Message = "The server had an error while processing your request. Sorry about that! (emulated)"
	case status == http.StatusUnauthorized:
		e.Type = "invalid_request_error"
		e.Code = strp("invalid_api_key")
		e.Message = "Incorrect API key provided (emulated)."
	default:
		e.Type = "invalid_request_error"
		e.Message = fmt.Sprintf("Emulated HTTP %d.", status)
	}
	return e
}

// quotaError is the 429 the real API sends when the account has no quota or
// credit left: unlike a rate limit, waiting does not help.
func quotaError() *apiError {
	return &apiError{Status: http.StatusTooManyRequests, Type: "insufficient_quota", Code: strp("insufficient_quota"),
		Message: "You exceeded your current quota, please check your plan and billing details (emulated)."}
}
