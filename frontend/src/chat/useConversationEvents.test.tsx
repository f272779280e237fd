import { QueryClientProvider, type QueryClient } from "@tanstack/react-query";
import { act, renderHook, waitFor } from "@testing-library/react";
import type { ReactNode } from "react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { keys, newTestQueryClient } from "../api/query";
import type { Transcript } from "../api/types";
import { approval, controlledBody, frame, jsonResponse, mockFetch, sseResponse, transcript, userItem } from "./testutil";
import { useChatStream } from "./useChatStream";
import { eventsTiming, useConversationEvents } from "./useConversationEvents";

const timing = { ...eventsTiming };
beforeEach(() => Object.assign(eventsTiming, { baseDelayMs: 10, maxDelayMs: 40, healthyMs: 10_000 }));
afterEach(() => {
  Object.assign(eventsTiming, timing);
  vi.unstubAllGlobals();
});

const path = "GET /api/conversations/conv_1/events";
const headerOf = (init: RequestInit, name: string) => (init.headers as Record<string, string> | undefined)?.[name];
const opened = { conversation_id: "conv_1", turn_id: "turn_2", kind: "message", offline: true, model: "m" };
const delta = (text: string) => ({ item_id: "msg_1", response_id: "r", delta: text });

function setup(tr: Transcript, client: QueryClient = newTestQueryClient()) {
  client.setQueryData(keys.conversation("conv_1"), tr);
  const wrapper = ({ children }: { children: ReactNode }) => <QueryClientProvider client={client}>{children}</QueryClientProvider>;
  const hook = renderHook(() => useConversationEvents("conv_1", true), { wrapper });
  return { ...hook, client, cached: () => client.getQueryData<Transcript>(keys.conversation("conv_1"))! };
}

describe("useConversationEvents", () => {
  it("starts after the transcript's last event when no turn runs, and stores what arrives", async () => {
    const body = controlledBody();
    const inits: RequestInit[] = [];
    const { calls } = mockFetch({ [path]: ({ init }) => { inits.push(init); return sseResponse(body.stream); } });
    const { result, cached } = setup(transcript([userItem(1, "hi")], { last_event_id: 12 }));
    await waitFor(() => expect(result.current.connection).toBe("live"));
    expect(headerOf(inits[0], "Last-Event-ID")).toBe("12");
    expect(headerOf(inits[0], "Accept")).toBe("text/event-stream");

    act(() => body.push(": ping\n\n" + frame(13, "conversation", opened) + frame(14, "approval.required", approval("mcpr_1", "delete_forecast"))));
    await waitFor(() => expect(cached().pending_approvals.map((a) => a.approval_request_id)).toEqual(["mcpr_1"]));
    expect(cached().conversation.streaming).toBe(true);
    expect(result.current.turn?.phase).toBe("streaming");
    act(() => body.push(frame(15, "completed", { response_id: "r", pending_approvals: 1, pending_approval_ids: ["mcpr_1"], sent: true })));
    await waitFor(() => expect(cached().conversation.streaming).toBe(false));
    expect(result.current.turn?.phase).toBe("ended");
    expect(calls.filter((c) => c.path.endsWith("/events"))).toHaveLength(1);
  });

  it("while a turn runs, starts at the turn's first event (no cursor): the answer streamed so far shows again", async () => {
    const body = controlledBody();
    const inits: RequestInit[] = [];
    mockFetch({ [path]: ({ init }) => { inits.push(init); return sseResponse(body.stream); } });
    const { result } = setup(transcript([userItem(1, "tell me")], { last_event_id: 18, streaming: true }));
    await waitFor(() => expect(result.current.connection).toBe("live"));
    expect(headerOf(inits[0], "Last-Event-ID")).toBeUndefined();
    act(() => body.push(frame(15, "conversation", opened) + frame(16, "item.done", { item: userItem(1, "tell me") })
      + frame(17, "text.delta", delta("Once upon ")) + frame(18, "text.delta", delta("a time"))));
    await waitFor(() => expect(result.current.turn?.texts).toEqual([{ itemId: "msg_1", text: "Once upon a time" }]));
    act(() => body.push(frame(19, "text.delta", delta(", live"))));
    await waitFor(() => expect(result.current.turn?.texts[0].text).toBe("Once upon a time, live"));
  });

  it("resumes with Last-Event-ID after a drop, and carries on where it was", async () => {
    const first = controlledBody();
    const second = controlledBody();
    const inits: RequestInit[] = [];
    mockFetch({ [path]: ({ init }) => { inits.push(init); return sseResponse(inits.length === 1 ? first.stream : second.stream); } });
    const { result } = setup(transcript([userItem(1, "hi")], { last_event_id: 3 }));
    await waitFor(() => expect(result.current.connection).toBe("live"));
    act(() => {
      first.push(frame(4, "conversation", opened) + frame(5, "text.delta", delta("Hel")));
      first.close(); // the replica went away
    });
    await waitFor(() => expect(inits).toHaveLength(2));
    expect(headerOf(inits[1], "Last-Event-ID")).toBe("5");
    // Another replica replays nothing twice: it goes on after 5.
    act(() => second.push(frame(6, "text.delta", delta("lo"))));
    await waitFor(() => expect(result.current.turn?.texts).toEqual([{ itemId: "msg_1", text: "Hello" }]));
    expect(result.current.connection).toBe("live");
  });

  it("backs off, gives up after the drops in a row it allows and says so; Reconnect connects again", async () => {
    eventsTiming.attempts = 2;
    let up = false;
    const { calls } = mockFetch({
      [path]: () => (up ? sseResponse(controlledBody().stream)
        : jsonResponse(503, { error: { code: "database_unavailable", message: "the database is unavailable" } })),
    });
    const { result } = setup(transcript([userItem(1, "hi")], { last_event_id: 3 }));
    await waitFor(() => expect(result.current.connection).toBe("off"));
    const tries = calls.filter((c) => c.path.endsWith("/events")).length;
    expect(tries).toBe(3);
    await new Promise((r) => setTimeout(r, 100));
    expect(calls.filter((c) => c.path.endsWith("/events"))).toHaveLength(tries);
    up = true;
    act(() => result.current.reconnect());
    await waitFor(() => expect(result.current.connection).toBe("live"));
  });

  it("a stream silent for longer than heartbeats allow counts as dropped", async () => {
    eventsTiming.idleMs = 60;
    const inits: RequestInit[] = [];
    mockFetch({ [path]: ({ init }) => { inits.push(init); return sseResponse(controlledBody().stream); } });
    setup(transcript([userItem(1, "hi")], { last_event_id: 3 }));
    await waitFor(() => expect(inits.length).toBeGreaterThanOrEqual(2));
    expect(headerOf(inits[1], "Last-Event-ID")).toBe("3");
  });

  it("stops for good when the conversation is gone: deleted while open, or refused (404)", async () => {
    const body = controlledBody();
    const { calls } = mockFetch({ [path]: () => sseResponse(body.stream) });
    const { result } = setup(transcript([userItem(1, "hi")], { last_event_id: 3 }));
    await waitFor(() => expect(result.current.connection).toBe("live"));
    act(() => body.push(frame(4, "conversation.deleted", { conversation_id: "conv_1" })));
    await waitFor(() => expect(result.current.connection).toBe("off"));
    await new Promise((r) => setTimeout(r, 100));
    expect(calls.filter((c) => c.path.endsWith("/events"))).toHaveLength(1);

    vi.unstubAllGlobals();
    const refused = mockFetch({ [path]: () => jsonResponse(404, { error: { code: "conversation_not_found", message: "no such conversation" } }) });
    const other = setup(transcript([userItem(1, "hi")], { last_event_id: 3 }));
    await waitFor(() => expect(other.result.current.connection).toBe("off"));
    await new Promise((r) => setTimeout(r, 100));
    expect(refused.calls.filter((c) => c.path.endsWith("/events"))).toHaveLength(1);
  });

  it("this page's own POST stream and the events stream bring the same events: each is applied once", async () => {
    const events = controlledBody();
    const post = controlledBody();
    mockFetch({
      [path]: () => sseResponse(events.stream),
      "POST /api/responses": () => sseResponse(post.stream, { "X-Conversation-Id": "conv_1" }),
    });
    const client = newTestQueryClient();
    client.setQueryData(keys.conversation("conv_1"), transcript([userItem(1, "hi")], { last_event_id: 3 }));
    const wrapper = ({ children }: { children: ReactNode }) => <QueryClientProvider client={client}>{children}</QueryClientProvider>;
    const { result } = renderHook(() => ({ stream: useChatStream(), events: useConversationEvents("conv_1", true) }), { wrapper });
    await waitFor(() => expect(result.current.events.connection).toBe("live"));
    await act(async () => { await result.current.stream.start({ kind: "message", input: "again", conversationId: "conv_1" }); });
    const same = frame(4, "conversation", opened) + frame(5, "item.done", { item: userItem(2, "again") })
      + frame(6, "text.delta", delta("Half an ans")) + frame(7, "text.delta", delta("wer"));
    const end = frame(8, "error", { code: "interrupted", message: "the replica running this turn stopped; the turn was closed", retryable: true });
    act(() => { post.push(same); events.push(same + end); });
    await waitFor(() => expect(result.current.events.turn?.phase).toBe("ended"));
    act(() => post.push(end));
    await waitFor(() => expect(result.current.stream.turn).toBeNull());
    const tr = client.getQueryData<Transcript>(keys.conversation("conv_1"))!;
    expect(tr.items.map((i) => i.type)).toEqual(["user_message", "user_message", "message", "error"]);
    expect(tr.items[2]).toMatchObject({ text: "Half an answer", partial: true });
  });
});
