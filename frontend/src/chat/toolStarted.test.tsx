// A tool that runs is named while it runs, asked or not (tool.started), and
// a call the turn ended before it finished says it may have run.
import { QueryClientProvider } from "@tanstack/react-query";
import { act, renderHook, screen, waitFor, within } from "@testing-library/react";
import type { ReactNode } from "react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { DecisionRecordedEvent, ToolStartedEvent } from "../api/events";
import { keys, newTestQueryClient } from "../api/query";
import type { Item, Transcript as TranscriptData } from "../api/types";
import i18n from "../i18n";
import { useRoute } from "../router";
import { renderWithClient } from "../testing";
import { ChatPage } from "./ChatPage";
import { advance, newTurn } from "./liveTurn";
import {
  approval, approvalItem, callItem, controlledBody, info, jsonResponse, mockFetch, opened, recordedEvent, sse, sseResponse, transcript,
  userItem,
} from "./testutil";
import { outcomeOf, withTurnEnd } from "./transcript";
import { Transcript } from "./Transcript";
import { useChatStream, type LiveTurn } from "./useChatStream";

beforeEach(() => { history.replaceState(null, "", "/c/conv_1"); });
afterEach(() => { vi.unstubAllGlobals(); vi.useRealTimers(); });

function Harness() {
  const r = useRoute();
  return r.page === "chat" ? <ChatPage conversationId={r.conversationId} /> : null;
}

const startedData = (over: Partial<ToolStartedEvent> = {}): ToolStartedEvent => ({
  item_id: "mcp_7", response_id: "resp_2", server_label: "demo", upstream_label: "demo", tool_name: "get_forecast",
  approval_request_id: null, started_at: "2026-11-22T10:00:00Z", ...over,
});
const started = (over: Partial<ToolStartedEvent> = {}): [string, unknown] => ["tool.started", startedData(over)];

const frame = (id: number, [name, data]: [string, unknown]) => `id: ${id}\nevent: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

const interrupted = (seq: number, tool: string, over: Partial<Extract<Item, { type: "mcp_call" }>> = {}): Item => ({
  seq, type: "mcp_call", id: "mcp_7", response_id: "resp_2", created_at: "t", server_label: "demo", upstream_label: "demo",
  name: tool, allowed_by: { kind: "policy", policy: "never", source: "global" }, interrupted: true, ...over,
});

const cancelled: Item = { seq: 9, type: "error", created_at: "t", turn_error: { code: "cancelled", message: "the turn was cancelled", retryable: false } };

describe("a tool that runs without asking", () => {
  it("is named in the status line with the seconds it runs, until its result arrives", async () => {
    const body = controlledBody();
    let tr: TranscriptData = transcript([userItem(1, "earlier")]);
    mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [tr.conversation] }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, tr),
      "POST /api/responses": () => sseResponse(body.stream),
    });
    renderWithClient(<Harness />);
    const user = userEvent.setup();
    const box = await screen.findByRole("textbox", { name: "Message" });
    await user.type(box, 'get_forecast {{"city":"Oslo"}');
    await user.click(screen.getByRole("button", { name: "Send" }));
    await act(async () => { body.push(sse([opened("message"), ["item.done", { item: userItem(2, 'get_forecast {"city":"Oslo"}') }]])); });
    expect(await screen.findByText("The model is working…")).toBeInTheDocument();

    vi.useFakeTimers({ toFake: ["setInterval", "Date"], shouldAdvanceTime: true });
    await act(async () => { body.push(frame(3, started())); });
    const status = await screen.findByRole("status");
    await waitFor(() => expect(status).toHaveTextContent(/^Running get_forecast… 0 s$/));
    expect(screen.queryByText("The model is working…")).toBeNull();
    act(() => { vi.advanceTimersByTime(2000); });
    expect(status).toHaveTextContent(/Running get_forecast… 2 s/);

    const done = callItem(3, "get_forecast", { id: "mcp_7", allowed_by: { kind: "policy", policy: "never", source: "global" } });
    tr = transcript([userItem(1, "earlier"), userItem(2, 'get_forecast {"city":"Oslo"}'), done]);
    await act(async () => { body.push(frame(4, ["item.done", { item: done }])); });
    await waitFor(() => expect(screen.queryByText(/Running get_forecast/)).toBeNull());
    expect(screen.getByText("The model is working…")).toBeInTheDocument();
    await act(async () => { body.push(frame(5, ["completed", { response_id: "resp_2", pending_approvals: 0, pending_approval_ids: [], sent: true }])); body.close(); });
    await waitFor(() => expect(screen.queryByRole("status")).toBeNull());
  });

  it("after Stop, says it may have run: the server keeps it as an interrupted call", async () => {
    const body = controlledBody();
    let tr: TranscriptData = transcript([userItem(1, "earlier")]);
    mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [tr.conversation] }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, tr),
      "POST /api/responses": () => sseResponse(body.stream),
      "POST /api/conversations/conv_1/cancel": () => {
        tr = transcript([userItem(1, "earlier"), userItem(2, "get_forecast"), interrupted(3, "get_forecast"), { ...cancelled, seq: 4 }]);
        setTimeout(() => {
          body.push(frame(9, ["error", { code: "cancelled", message: "the turn was cancelled", retryable: false }]));
          body.close();
        }, 10);
        return jsonResponse(202, { cancelled: true });
      },
    });
    renderWithClient(<Harness />);
    const user = userEvent.setup();
    await user.type(await screen.findByRole("textbox", { name: "Message" }), "get_forecast");
    await user.click(screen.getByRole("button", { name: "Send" }));
    await act(async () => { body.push(sse([opened("message"), ["item.done", { item: userItem(2, "get_forecast") }], started()])); });
    expect(await screen.findByText(/Running get_forecast…/)).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Stop" }));
    expect(await screen.findByText("get_forecast may have run: Toolgate stopped waiting before the provider reported its result.")).toBeInTheDocument();
    expect(screen.getByText("interrupted")).toBeInTheDocument();
    expect(screen.getByText("Stopped.")).toBeInTheDocument();
    expect(screen.queryByText("ok")).toBeNull();
    expect(screen.queryByRole("status")).toBeNull();
  });
});

describe("the live turn and the cached transcript", () => {
  it("an approved call named by tool.started is the one already counted as running, not a second", () => {
    const a = approval("mcpr_1", "delete_forecast", { state: "approved" });
    const tr = transcript([approvalItem(1, a)]);
    let t = advance(newTurn({ kind: "decisions", conversationId: "conv_1", decisions: [] }),
      { event: "decision.recorded", id: 1, data: recordedEvent(a)[1] as DecisionRecordedEvent }, tr, 5);
    t = advance(t, { event: "tool.started", id: 2, data: startedData({ tool_name: "delete_forecast", approval_request_id: "mcpr_1" }) }, tr, 9);
    expect(t.running).toEqual([{ approvalId: "mcpr_1", itemId: "mcp_7", responseId: "resp_2", tool: "delete_forecast", server: "demo", upstream: "demo", since: 5 }]);
    t = advance(t, { event: "item.done", id: 3, data: { item: callItem(2, "delete_forecast", { id: "mcp_7", approval_request_id: "mcpr_1" }) } }, tr, 10);
    expect(t.running).toEqual([]);
  });

  it("a turn that ends while a call runs keeps it as an interrupted call, before the partial text and the error, as the server does", () => {
    let t = advance(newTurn({ kind: "message", input: "go", conversationId: "conv_1" }), { event: "tool.started", id: 1, data: startedData() }, undefined, 1);
    t = advance(t, { event: "tool.started", id: 2, data: startedData({ item_id: "mcp_8", tool_name: "list_forecasts" }) }, undefined, 2);
    t = advance(t, { event: "item.done", id: 3, data: { item: callItem(2, "list_forecasts", { id: "mcp_8" }) } }, undefined, 3);
    expect(t.running.map((r) => r.tool)).toEqual(["get_forecast"]);
    const tr = withTurnEnd(transcript([userItem(1, "go")], { streaming: true }), { code: "cancelled", message: "stopped", retryable: false },
      [{ itemId: "msg_1", text: "Hal" }], t.running);
    expect(tr.items.slice(1)).toMatchObject([
      { seq: 2, type: "mcp_call", id: "mcp_7", name: "get_forecast", server_label: "demo", response_id: "resp_2", interrupted: true },
      { seq: 3, type: "message", partial: true },
      { seq: 4, type: "error" },
    ]);
  });

  it("the stream hook: a call started and not finished when the turn ends is in the cached transcript as interrupted", async () => {
    const client = newTestQueryClient();
    client.setQueryData(keys.conversation("conv_1"), transcript([userItem(1, "earlier")]));
    mockFetch({
      "POST /api/responses": () => sseResponse(sse([
        opened("message"), ["item.done", { item: userItem(2, "get_forecast") }], started(),
        ["error", { code: "cancelled", message: "the turn was cancelled", retryable: false }],
      ])),
    });
    const onEnd = vi.fn<(t: LiveTurn) => void>();
    const wrapper = ({ children }: { children: ReactNode }) => <QueryClientProvider client={client}>{children}</QueryClientProvider>;
    const { result } = renderHook(() => useChatStream({ onEnd }), { wrapper });
    await act(async () => { await result.current.start({ kind: "message", input: "get_forecast", conversationId: "conv_1" }); });
    await waitFor(() => expect(onEnd).toHaveBeenCalled());
    expect(onEnd.mock.calls[0][0].running).toEqual([]);
    const items = client.getQueryData<TranscriptData>(keys.conversation("conv_1"))!.items;
    expect(items.map((i) => [i.seq, i.type])).toEqual([[1, "user_message"], [2, "user_message"], [3, "mcp_call"], [4, "error"]]);
    expect(items[2]).toMatchObject({ id: "mcp_7", name: "get_forecast", interrupted: true });
  });

  it("an approved call that was interrupted may have run: not 'ran'", () => {
    const a = approval("mcpr_1", "delete_forecast", { state: "approved", answered_in: "resp_2" });
    expect(outcomeOf(transcript([approvalItem(1, a), interrupted(2, "delete_forecast", { approval_request_id: "mcpr_1" })]), a)).toBe("interrupted");
  });
});

describe("an interrupted call in the transcript", () => {
  const show = (items: Item[]) => renderWithClient(<Transcript transcript={transcript(items)} turn={null} serverStreaming={false}
    stopping={false} status={{}} onDecide={vi.fn()} cardRef={() => () => {}} onRetry={vi.fn()} retryError={null} />);

  it("of an approved tool: its decision says it started and may have run, and the call says so", () => {
    const a = approval("mcpr_1", "delete_forecast", { state: "approved", answered_in: "resp_2" });
    show([userItem(1, "go"), approvalItem(2, a), interrupted(3, "delete_forecast", { approval_request_id: "mcpr_1", allowed_by: { kind: "approval" } }), cancelled]);
    expect(screen.getByText("delete_forecast started, but the response ended before it reported a result: it may have run (see below).")).toBeInTheDocument();
    expect(screen.getByText("delete_forecast may have run: Toolgate stopped waiting before the provider reported its result.")).toBeInTheDocument();
    expect(screen.queryByText(/delete_forecast ran/)).toBeNull();
    expect(screen.queryByText(/^Unknown whether/)).toBeNull();
  });

  it("is told apart from a call that ran, which shows its result", () => {
    show([userItem(1, "go"), callItem(2, "list_forecasts", { id: "mcp_1", output: "2 forecasts" }), interrupted(3, "get_forecast"), cancelled]);
    const rows = screen.getAllByText(/^(list_forecasts|get_forecast)$/).map((el) => el.closest(".tool-call") as HTMLElement);
    expect(within(rows[0]).getByText("ok")).toBeInTheDocument();
    expect(within(rows[1]).getByText("interrupted")).toBeInTheDocument();
    expect(within(rows[1]).queryByText("Output")).toBeNull();
  });

  it("reads German", async () => {
    await i18n.changeLanguage("de");
    try {
      show([userItem(1, "go"), interrupted(2, "get_forecast"), cancelled]);
      expect(screen.getByText("get_forecast wurde möglicherweise ausgeführt: Toolgate hat aufgehört zu warten, bevor der Anbieter das Ergebnis gemeldet hat.")).toBeInTheDocument();
      expect(screen.getByText("unterbrochen")).toBeInTheDocument();
    } finally {
      await i18n.changeLanguage("en");
    }
  });
});
