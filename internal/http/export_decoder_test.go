package http_test

import "github.com/getkin/kin-openapi/openapi3filter"

// The audit export is JSON lines: the spec check reads it as text.
func init() {
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", openapi3filter.PlainBodyDecoder)
}
