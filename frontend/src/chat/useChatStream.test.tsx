import { QueryClientProvider, type QueryClient } from "@tanstack/react-query";
import { act, renderHook, waitFor } from "@testing-library/react";
import type { ReactNode } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { keys, newTestQueryClient } from "../api/query";
import type { Approval, Transcript } from "../api/types";
import { newTranscript } from "./transcript";
import { controlledBody, jsonResponse, mockFetch, sse, sseResponse } from "./testutil";
import { useChatStream, type ChatStreamOptions, type LiveTurn } from "./useChatStream";

afterEach(() => vi.unstubAllGlobals());

const conv = { conversation_id: "conv_9", turn_id: "turn_1", kind: "message", offline: true, model: "m" };

function approval(id: string, over: Partial<Approval> = {}): Approval {
  return {
    approval_request_id: id, conversation_id: "conv_9", response_id: "resp_1", server_label: "demo", upstream_label: "demo",
    tool_name: "delete_forecast", arguments: { city: "Oslo" }, redacted: [], annotations: {}, asks_because: { policy: "always", source: "tool" },
    requested_at: "t", state: "pending", decided_at: null, decided_by: null, decided_by_id: null, reason: null, scope: null, remember: false, answered_in: null, expires_at: null,
    correction: null, corrects: null,
    ...over,
  };
}

const recorded = (id: string, over: object = {}) => ({
  approval_request_id: id, server_label: "demo", tool_name: "delete_forecast", state: "approved", reason: null, scope: "once",
  remember: false, policy_changed: null, decided_at: "t", pending_approval_ids: [], ...over,
});

function setup(options?: ChatStreamOptions, client: QueryClient = newTestQueryClient()) {
  const wrapper = ({ children }: { children: ReactNode }) => <QueryClientProvider client={client}>{children}</QueryClientProvider>;
  const hook = renderHook((o?: ChatStreamOptions) => useChatStream(o), { wrapper, initialProps: options });
  const cached = (id = "conv_9") => client.getQueryData<Transcript>(keys.conversation(id));
  return { ...hook, client, cached };
}

/** A transcript of conv_9 already in the cache, as the page would have it. */
function seeded(t: Partial<Transcript> = {}) {
  const client = newTestQueryClient();
  client.setQueryData(keys.conversation("conv_9"), { ...newTranscript("conv_9"), ...t, conversation: { ...newTranscript("conv_9").conversation, streaming: false } });
  return client;
}

describe("useChatStream", () => {
  it("keeps the identity of its object and callbacks across renders while nothing changes", () => {
    const { result, rerender } = setup({ onEnd: () => {} });
    const first = result.current;
    rerender({ onEnd: () => {} });
    rerender({ onConversation: () => {} });
    expect(result.current).toBe(first);
    expect(result.current.start).toBe(first.start);
    expect(result.current.stop).toBe(first.stop);
    expect(result.current.detach).toBe(first.detach);
  });

  it("reports a JSON error answered before the stream, and shows no live turn", async () => {
    const { calls } = mockFetch({
      "POST /api/responses": () => jsonResponse(409, { error: { code: "turn_in_progress", message: "a turn is streaming in conversation conv_9" } }),
    });
    const onEnd = vi.fn();
    const { result } = setup({ onEnd });
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

  it("learns a new conversation's id from the header, streams text, and puts the stored items in the cache", async () => {
    const body = controlledBody();
    const { fn } = mockFetch({ "POST /api/responses": () => sseResponse(body.stream, { "X-Conversation-Id": "conv_9" }) });
    const onConversation = vi.fn();
    const onEnd = vi.fn<(t: LiveTurn) => void>();
    const { result, cached } = setup({ onConversation, onEnd });
    await act(async () => { await result.current.start({ kind: "message", input: "hello" }); });
    expect(onConversation).toHaveBeenCalledWith("conv_9", expect.objectContaining({ conversationId: "conv_9" }));
    expect(fn.mock.calls[0][1]?.headers).toMatchObject({ Accept: "text/event-stream" });
    expect(result.current.turn?.pendingInput).toBe("hello");
    expect(cached()?.conversation.streaming).toBe(true);

    await act(async () => {
      body.push(sse([
        ["conversation", conv],
        ["item.done", { item: { seq: 1, type: "user_message", id: "u1", created_at: "t", text: "hello" } }],
        ["text.delta", { item_id: "msg_1", response_id: "r", delta: "Hel" }],
        ["text.delta", { item_id: "msg_1", response_id: "r", delta: "lo!" }],
      ]));
    });
    await waitFor(() => expect(result.current.turn?.texts).toEqual([{ itemId: "msg_1", text: "Hello!" }]));
    expect(result.current.turn?.pendingInput).toBeNull();
    expect(cached()?.items.map((i) => i.type)).toEqual(["user_message"]);
    expect(result.current.running).toBe(true);

    await act(async () => {
      body.push("id: 5\nevent: item.done\ndata: " + JSON.stringify({ item: { seq: 2, type: "message", id: "msg_1", created_at: "t", text: "Hello there!" } }) + "\n\n");
      body.push("id: 6\nevent: completed\ndata: " + JSON.stringify({ response_id: "r", pending_approvals: 0, pending_approval_ids: [], sent: true }) + "\n\n");
    });
    await waitFor(() => expect(onEnd).toHaveBeenCalledTimes(1));
    const ended = onEnd.mock.calls[0][0];
    expect(ended.terminal).toMatchObject({ event: "completed", data: { sent: true } });
    expect(ended.cut).toBeNull();
    expect(ended.texts).toEqual([]);
    expect(cached()?.items.map((i) => i.type)).toEqual(["user_message", "message"]);
    expect(cached()?.conversation.streaming).toBe(false);
    await waitFor(() => expect(result.current.turn).toBeNull());
    expect(onConversation).toHaveBeenCalledTimes(1);
  });

  it("says the stream broke when it ends without a terminal event", async () => {
    mockFetch({
      "POST /api/conversations/conv_9/retry": () => sseResponse(sse([["conversation", conv], ["text.delta", { item_id: "m", response_id: "r", delta: "x" }]])),
    });
    const onEnd = vi.fn<(t: LiveTurn) => void>();
    const { result } = setup({ onEnd });
    await act(async () => { await result.current.start({ kind: "retry", conversationId: "conv_9" }); });
    await waitFor(() => expect(onEnd).toHaveBeenCalled());
    expect(onEnd.mock.calls[0][0]).toMatchObject({ cut: "broken", terminal: null, conversationId: "conv_9" });
  });

  it("records decisions in the cached transcript, and refreshes the tool's policies when one was remembered", async () => {
    const a1 = approval("mcpr_1");
    const a2 = approval("mcpr_2", { tool_name: "send_alert" });
    const client = seeded({
      items: [{ seq: 1, type: "mcp_approval_request", id: "mcpr_1", response_id: "resp_1", created_at: "t", server_label: "demo", upstream_label: "demo", name: "delete_forecast", arguments: {}, approval: a1 }],
      pending_approvals: [a1, a2],
    });
    const tools = vi.spyOn(client, "invalidateQueries");
    mockFetch({
      "POST /api/responses/approval-response": () => sseResponse(sse([
        ["conversation", { ...conv, kind: "decisions" }],
        ["decision.recorded", recorded("mcpr_1", { state: "denied", reason: "no", remember: true, pending_approval_ids: ["mcpr_2"],
          policy_changed: { server_label: "demo", tool_name: "delete_forecast", policy: "blocked", layer: "user" } })],
        ["completed", { response_id: "resp_1", pending_approvals: 1, pending_approval_ids: ["mcpr_2"], sent: false }],
      ])),
    });
    const onEnd = vi.fn();
    const { result, cached } = setup({ onEnd }, client);
    await act(async () => {
      await result.current.start({ kind: "decisions", conversationId: "conv_9", decisions: [{ approval_request_id: "mcpr_1", approve: false, reason: "no" }] });
    });
    await waitFor(() => expect(onEnd).toHaveBeenCalled());
    const tr = cached()!;
    expect(tr.items[0]).toMatchObject({ approval: { state: "denied", reason: "no", remember: true } });
    expect(tr.pending_approvals.map((a) => a.approval_request_id)).toEqual(["mcpr_2"]);
    expect(tr.conversation.pending_approvals).toBe(1);
    expect(tools).toHaveBeenCalledWith({ queryKey: keys.tools("demo") });
    expect(onEnd.mock.calls[0][0].running).toEqual([]);
  });

  it("knows which approved tool runs until its call arrives", async () => {
    const a1 = approval("mcpr_1");
    const client = seeded({
      items: [{ seq: 1, type: "mcp_approval_request", id: "mcpr_1", response_id: "resp_1", created_at: "t", server_label: "demo", upstream_label: "demo", name: "delete_forecast", arguments: {}, approval: a1 }],
      pending_approvals: [a1],
    });
    const body = controlledBody();
    mockFetch({ "POST /api/responses/approval-response": () => sseResponse(body.stream) });
    const { result, cached } = setup({}, client);
    await act(async () => {
      await result.current.start({ kind: "decisions", conversationId: "conv_9", decisions: [{ approval_request_id: "mcpr_1", approve: true }] });
    });
    await act(async () => { body.push(sse([["conversation", { ...conv, kind: "decisions" }], ["decision.recorded", recorded("mcpr_1")]])); });
    await waitFor(() => expect(result.current.turn?.running).toMatchObject([{ approvalId: "mcpr_1", tool: "delete_forecast", server: "demo" }]));
    const call = { seq: 2, type: "mcp_call", id: "mcp_1", response_id: "resp_2", created_at: "t", server_label: "demo", upstream_label: "demo",
      name: "delete_forecast", arguments: { city: "Oslo" }, output: "Deleted.", approval_request_id: "mcpr_1", allowed_by: { kind: "approval" } };
    await act(async () => { body.push(`id: 9\nevent: item.done\ndata: ${JSON.stringify({ item: call })}\n\n`); });
    await waitFor(() => expect(result.current.turn?.running).toEqual([]));
    expect(cached()?.items.at(-1)).toMatchObject({ type: "mcp_call", approval_request_id: "mcpr_1" });
    await act(async () => { body.close(); });
  });

  it("a turn that did not complete leaves what arrived as a partial message and an error item, as the server stores it", async () => {
    const client = seeded();
    mockFetch({
      "POST /api/responses": () => sseResponse(sse([
        ["conversation", conv],
        ["item.done", { item: { seq: 1, type: "user_message", id: "u1", created_at: "t", text: "go" } }],
        ["text.delta", { item_id: "msg_1", response_id: "r", delta: "Half an ans" }],
        ["error", { code: "upstream_cut", message: "the connection to the model broke off", retryable: true }],
      ])),
    });
    const onEnd = vi.fn<(t: LiveTurn) => void>();
    const { result, cached } = setup({ onEnd }, client);
    await act(async () => { await result.current.start({ kind: "message", input: "go", conversationId: "conv_9" }); });
    await waitFor(() => expect(onEnd).toHaveBeenCalled());
    expect(onEnd.mock.calls[0][0].cut).toBeNull();
    const tr = cached()!;
    expect(tr.conversation.streaming).toBe(false);
    expect(tr.items.map((i) => [i.seq, i.type])).toEqual([[1, "user_message"], [2, "message"], [3, "error"]]);
    expect(tr.items[1]).toMatchObject({ id: "msg_1", text: "Half an ans", partial: true });
    expect(tr.items[2]).toMatchObject({ turn_error: { code: "upstream_cut", retryable: true } });
  });

  it("Stop cancels the turn on the server; the stream ends with the server's cancelled error", async () => {
    const body = controlledBody();
    const { calls } = mockFetch({
      "POST /api/responses": () => sseResponse(body.stream, { "X-Conversation-Id": "conv_9" }),
      "POST /api/conversations/conv_9/cancel": () => {
        setTimeout(() => {
          body.push("id: 3\nevent: error\ndata: " + JSON.stringify({ code: "cancelled", message: "the turn was cancelled", retryable: false }) + "\n\n");
          body.close();
        }, 10);
        return jsonResponse(202, { cancelled: true });
      },
    });
    const onEnd = vi.fn<(t: LiveTurn) => void>();
    const { result, cached } = setup({ onEnd }, seeded());
    await act(async () => { await result.current.start({ kind: "message", input: "go", conversationId: "conv_9" }); });
    await act(async () => { body.push(sse([["conversation", conv]])); });
    await act(async () => { await result.current.stop(); });
    await waitFor(() => expect(onEnd).toHaveBeenCalled());
    expect(calls.map((c) => `${c.method} ${c.path}`)).toContain("POST /api/conversations/conv_9/cancel");
    expect(onEnd.mock.calls[0][0]).toMatchObject({ cut: null, terminal: { event: "error", data: { code: "cancelled" } } });
    expect(cached()?.items.at(-1)).toMatchObject({ type: "error", turn_error: { code: "cancelled" } });
    expect(result.current.running).toBe(false);
  });

  it("Stop leaves the stream at once when the server has no turn to cancel", async () => {
    const body = controlledBody();
    mockFetch({
      "POST /api/responses": ({ init }) => {
        init.signal?.addEventListener("abort", () => body.stream.cancel().catch(() => {}));
        return sseResponse(body.stream, { "X-Conversation-Id": "conv_9" });
      },
      "POST /api/conversations/conv_9/cancel": () => jsonResponse(409, { error: { code: "no_turn_running", message: "no turn is running" } }),
    });
    const onEnd = vi.fn<(t: LiveTurn) => void>();
    const { result } = setup({ onEnd });
    await act(async () => { await result.current.start({ kind: "message", input: "go", conversationId: "conv_9" }); });
    await act(async () => { await result.current.stop(); });
    await waitFor(() => expect(onEnd).toHaveBeenCalled());
    expect(onEnd.mock.calls[0][0].cut).toBe("stopped");
    expect(result.current.running).toBe(false);
  });

  it("refuses a second stream while one runs, and says when it is idle again", async () => {
    const body = controlledBody();
    mockFetch({ "POST /api/responses": () => sseResponse(body.stream, { "X-Conversation-Id": "conv_9" }) });
    const { result } = setup();
    await act(async () => { await result.current.start({ kind: "message", input: "one" }); });
    let second!: Awaited<ReturnType<typeof result.current.start>>;
    await act(async () => { second = await result.current.start({ kind: "message", input: "two" }); });
    expect(second.ok).toBe(false);
    const idle = vi.fn();
    void result.current.idle().then(idle);
    await Promise.resolve();
    expect(idle).not.toHaveBeenCalled();
    await act(async () => { body.close(); });
    await waitFor(() => expect(idle).toHaveBeenCalled());
  });
});
