package emulator_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/emulator"
)

// BenchmarkEmulator_StreamedTextTurn measures one streamed turn without
// tools through the real openai-go client: the emulator's floor.
func BenchmarkEmulator_StreamedTextTurn(b *testing.B) {
	e := startEmulator(b, emulator.Config{})
	params := responses.ResponseNewParams{
		Model: "gpt-4o-mini",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello there, how are you today?")},
	}
	b.ReportAllocs()
	for b.Loop() {
		drain(b, e, params)
	}
}

// BenchmarkEmulator_StreamedToolTurn measures a streamed turn that lists an
// MCP server's tools and runs one over real MCP (streamable HTTP, loopback).
func BenchmarkEmulator_StreamedToolTurn(b *testing.B) {
	e := startEmulator(b, emulator.Config{})
	m := startTestMCP(b, "")
	params := responses.ResponseNewParams{
		Model: "gpt-4o-mini",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(`echo {"text": "hi"}`)},
		Tools: []responses.ToolUnionParam{{OfMcp: &responses.ToolMcpParam{
			ServerLabel:     "bench",
			ServerURL:       openai.String(m.URL),
			RequireApproval: responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalSetting: openai.String("never")},
		}}},
	}
	b.ReportAllocs()
	for b.Loop() {
		drain(b, e, params)
	}
}

func drain(b *testing.B, e *emu, params responses.ResponseNewParams) {
	stream := e.Client.Responses.NewStreaming(context.Background(), params)
	completed := false
	for stream.Next() {
		if _, ok := stream.Current().AsAny().(responses.ResponseCompletedEvent); ok {
			completed = true
		}
	}
	if err := stream.Err(); err != nil || !completed {
		b.Fatalf("stream: err=%v completed=%v", err, completed)
	}
	_ = stream.Close()
}
