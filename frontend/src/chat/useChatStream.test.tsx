import { act, renderHook, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { controlledBody, jsonResponse, mockFetch, sse, sseResponse } from "./testutil";
import { useChatStream, type LiveTurn } from "./useChatStream";

afterEach(() => vi.unstubAllGlobals());

const conv = { conversation_id: "conv_9", turn_id: "turn_1", kind: "message", offline: true, model: "m" };

describe("useChatStream", () => {
  it("reports a JSON error answered before the stream, and shows no live turn", async () => {
    const { calls } = mockFetch({
      "POST /api/responses": () => jsonResponse(409, { error: { code: "turn_in_progress", message: "a turn is streaming in conversation conv_9" } }),
    });
    const onEnd = vi.fn();
    const { result } = renderHook(() => useChatStream({ onEnd }));
    let r!: Awaited<ReturnType<typeof result.current.start>>;
    await act(async () => { r = await result.current.start({ kind: "message", input: "hi", conversationId: "conv_9" }); });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe("turn_in_progress");
      expect(r.error.message).toBe("a turn is streaming in conversation conv_9");
    }
    expect(result.current.turn).toBeNull();
    expect(result.current.running).toBe(false);
    expect(onEnd).not.toHaveBeenCalled();
    expect(calls[0].body).toEqual({ input: "hi", conversation_id: "conv_9" });
  });

  it("learns a new conversation's id from the header, appends text deltas, and ends on the terminal event", async () => {
    const body = controlledBody();
    const { fn } = mockFetch({ "POST /api/responses": () => sseResponse(body.stream, { "X-Conversation-Id": "conv_9" }) });
    const onConversation = vi.fn();
    const onEnd = vi.fn<(t: LiveTurn) => void>();
    const { result } = renderHook(() => useChatStream({ onConversation, onEnd }));
    await act(async () => { await result.current.start({ kind: "message", input: "hello" }); });
    expect(onConversation).toHaveBeenCalledWith("conv_9");
    expect(fn.mock.calls[0][1]?.headers).toMatchObject({ Accept: "text/event-stream" });
    expect(result.current.turn?.entries).toEqual([{ type: "pending_user", key: "pending-user", text: "hello" }]);

    await act(async () => {
      body.push(sse([
        ["conversation", conv],
        ["item.done", { item: { seq: 1, type: "user_message", id: "u1", created_at: "t", text: "hello" } }],
        ["text.delta", { item_id: "msg_1", response_id: "r", delta: "Hel" }],
        ["text.delta", { item_id: "msg_1", response_id: "r", delta: "lo!" }],
      ]));
    });
    await waitFor(() => expect(result.current.turn?.entries.at(-1)).toMatchObject({ type: "text", text: "Hello!" }));
    expect(result.current.turn?.entries[0]).toMatchObject({ type: "item", item: { type: "user_message" } });
    expect(result.current.running).toBe(true);

    await act(async () => {
      body.push("id: 5\nevent: item.done\ndata: " + JSON.stringify({ item: { seq: 2, type: "message", id: "msg_1", created_at: "t", text: "Hello there!" } }) + "\n\n");
      body.push("id: 6\nevent: completed\ndata: " + JSON.stringify({ response_id: "r", pending_approvals: 0, pending_approval_ids: [], sent: true }) + "\n\n");
    });
    await waitFor(() => expect(onEnd).toHaveBeenCalledTimes(1));
    const ended = onEnd.mock.calls[0][0];
    expect(ended.terminal).toMatchObject({ event: "completed", data: { sent: true } });
    expect(ended.cut).toBeNull();
    expect(ended.entries.map((e) => e.type)).toEqual(["item", "item"]);
    expect(result.current.running).toBe(false);
    expect(onConversation).toHaveBeenCalledTimes(1);
  });

  it("says the stream broke when it ends without a terminal event", async () => {
    mockFetch({
      "POST /api/conversations/conv_9/retry": () => sseResponse(sse([["conversation", conv], ["text.delta", { item_id: "m", response_id: "r", delta: "x" }]])),
    });
    const onEnd = vi.fn<(t: LiveTurn) => void>();
    const { result } = renderHook(() => useChatStream({ onEnd }));
    await act(async () => { await result.current.start({ kind: "retry", conversationId: "conv_9" }); });
    await waitFor(() => expect(onEnd).toHaveBeenCalled());
    expect(onEnd.mock.calls[0][0]).toMatchObject({ cut: "broken", terminal: null, conversationId: "conv_9" });
  });

  it("records decisions, which outlive their turn", async () => {
    mockFetch({
      "POST /api/responses/approval-response": () => sseResponse(sse([
        ["conversation", { ...conv, kind: "decisions" }],
        ["decision.recorded", { approval_request_id: "mcpr_1", server_label: "demo", tool_name: "t", state: "denied", reason: "no", scope: "once", remember: false, policy_changed: null, decided_at: "t", pending_approval_ids: ["mcpr_2"] }],
        ["completed", { response_id: "r", pending_approvals: 1, pending_approval_ids: ["mcpr_2"], sent: false }],
      ])),
    });
    const onEnd = vi.fn();
    const { result } = renderHook(() => useChatStream({ onEnd }));
    await act(async () => {
      await result.current.start({ kind: "decisions", conversationId: "conv_9", decisions: [{ approval_request_id: "mcpr_1", approve: false, reason: "no" }] });
    });
    await waitFor(() => expect(onEnd).toHaveBeenCalled());
    act(() => result.current.clear(1));
    expect(result.current.turn).toBeNull();
    expect(result.current.recorded.mcpr_1).toMatchObject({ state: "denied", reason: "no" });
  });

  it("Stop cancels the turn on the server and leaves the stream", async () => {
    const body = controlledBody();
    const { calls } = mockFetch({
      "POST /api/responses": ({ init }) => {
        init.signal?.addEventListener("abort", () => body.stream.cancel().catch(() => {}));
        return sseResponse(body.stream, { "X-Conversation-Id": "conv_9" });
      },
      "POST /api/conversations/conv_9/cancel": () => jsonResponse(202, { cancelled: true }),
    });
    const onEnd = vi.fn<(t: LiveTurn) => void>();
    const { result } = renderHook(() => useChatStream({ onEnd }));
    await act(async () => { await result.current.start({ kind: "message", input: "go", conversationId: "conv_9" }); });
    await act(async () => { body.push(sse([["conversation", conv]])); });
    await act(async () => { await result.current.stop(); });
    await waitFor(() => expect(onEnd).toHaveBeenCalled());
    expect(calls.map((c) => `${c.method} ${c.path}`)).toContain("POST /api/conversations/conv_9/cancel");
    expect(onEnd.mock.calls[0][0].cut).toBe("stopped");
    expect(result.current.running).toBe(false);
  });

  it("refuses a second stream while one runs", async () => {
    const body = controlledBody();
    mockFetch({ "POST /api/responses": () => sseResponse(body.stream, { "X-Conversation-Id": "conv_9" }) });
    const { result } = renderHook(() => useChatStream());
    await act(async () => { await result.current.start({ kind: "message", input: "one" }); });
    let second!: Awaited<ReturnType<typeof result.current.start>>;
    await act(async () => { second = await result.current.start({ kind: "message", input: "two" }); });
    expect(second.ok).toBe(false);
    await act(async () => { body.close(); });
  });
});
