import { act, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Item } from "../api/types";
import i18n from "../i18n";
import { renderWithClient } from "../testing";
import { approval, approvalItem, callItem, transcript, userItem } from "./testutil";
import { Transcript, buildRows, type TranscriptProps } from "./Transcript";
import type { LiveTurn } from "./useChatStream";

afterEach(() => vi.useRealTimers());

function show(over: Partial<TranscriptProps>) {
  const props: TranscriptProps = {
    transcript: undefined, turn: null, serverStreaming: false, stopping: false, status: {},
    onDecide: vi.fn(), cardRef: () => () => {}, onRetry: vi.fn(), retryError: null, ...over,
  };
  return renderWithClient(<Transcript {...props} />);
}

const liveTurn = (over: Partial<LiveTurn> = {}): LiveTurn => ({
  request: { kind: "decisions", conversationId: "conv_1", decisions: [] }, conversationId: "conv_1", phase: "streaming",
  pendingInput: null, texts: [], running: [], terminal: null, cut: null, ...over,
});

const stopped: Item = { seq: 9, type: "error", created_at: "t", turn_error: { code: "cancelled", message: "the turn was cancelled", retryable: false } };

describe("Transcript", () => {
  it("says an approved tool ran when its call is in the transcript", () => {
    const a = approval("mcpr_1", "delete_forecast", { state: "approved", answered_in: "resp_2" });
    show({ transcript: transcript([userItem(1, "go"), approvalItem(2, a), callItem(3, "delete_forecast", { approval_request_id: "mcpr_1" })]) });
    expect(screen.getByText("delete_forecast ran: its result is below.")).toBeInTheDocument();
  });

  it("after Stop: unknown whether an approved tool ran when its answer reached the provider and no call came back", () => {
    const a = approval("mcpr_1", "delete_forecast", { state: "approved", answered_in: "unknown" });
    show({ transcript: transcript([userItem(1, "go"), approvalItem(2, a), stopped]) });
    expect(screen.getByText(/^Unknown whether delete_forecast ran: your approval reached the model's provider \(or may have\)/)).toBeInTheDocument();
    expect(screen.getByText("Stopped.")).toBeInTheDocument();
  });

  it("says an approved tool did not run when its answer never reached the model", () => {
    const a = approval("mcpr_1", "delete_forecast", { state: "approved", answered_in: null });
    show({ transcript: transcript([userItem(1, "go"), approvalItem(2, a), stopped]) });
    expect(screen.getByText(/^delete_forecast did not run: your approval has not reached the model yet/)).toBeInTheDocument();
  });

  it("says nothing about running while other requests of the response wait; a denied request is just denied", () => {
    const a = approval("mcpr_1", "delete_forecast", { state: "approved" });
    const b = approval("mcpr_2", "send_alert");
    const c = approval("mcpr_3", "set_forecast", { response_id: "resp_0", state: "denied", reason: "no" });
    show({ transcript: transcript([approvalItem(1, c), approvalItem(2, a), approvalItem(3, b)]) });
    expect(screen.queryByText(/ran|did not run/)).toBeNull();
    expect(screen.getByText("denied: no")).toBeInTheDocument();
    expect(screen.getByText("1 of 2 decided — waiting for the rest")).toBeInTheDocument();
  });

  it("names the tools that run and counts the seconds, instead of only saying the model works", () => {
    vi.useFakeTimers({ toFake: ["setInterval", "Date"] });
    const a = approval("mcpr_1", "delete_forecast", { state: "approved" });
    const since = Date.now();
    show({
      transcript: transcript([approvalItem(1, a)], { streaming: true }),
      turn: liveTurn({ running: [{ approvalId: "mcpr_1", tool: "delete_forecast", server: "demo", since }] }),
    });
    const status = screen.getByRole("status");
    expect(status).toHaveTextContent("Running delete_forecast… 0 s");
    act(() => { vi.advanceTimersByTime(3000); });
    expect(status).toHaveTextContent("Running delete_forecast… 3 s");
    expect(screen.queryByText("The model is working…")).toBeNull();
    expect(screen.getByText("delete_forecast is running…")).toBeInTheDocument();
  });

  it("says the model works while a turn streams with nothing named running, and shows what it sent and the text so far", () => {
    show({
      transcript: transcript([userItem(1, "earlier")]),
      turn: liveTurn({ request: { kind: "message", input: "hi" }, pendingInput: "hi", texts: [] }),
    });
    expect(screen.getByRole("status")).toHaveTextContent("The model is working…");
    expect(screen.getByText("hi")).toBeInTheDocument();
  });

  it("in German, the elapsed time and the running tool read German", async () => {
    await i18n.changeLanguage("de");
    show({
      transcript: transcript([]),
      turn: liveTurn({ running: [{ approvalId: "mcpr_1", tool: "delete_forecast", server: "demo", since: Date.now() }] }),
    });
    expect(screen.getByRole("status")).toHaveTextContent("delete_forecast läuft… 0 s");
  });

  it("offers Retry only on the last error, when nothing runs", () => {
    const cut: Item = { seq: 2, type: "error", created_at: "t", turn_error: { code: "upstream_cut", message: "broke off", retryable: true } };
    const { rerender } = show({ transcript: transcript([userItem(1, "go"), cut]) });
    expect(screen.getByRole("button", { name: "Retry" })).toBeEnabled();
    rerender(<Transcript transcript={transcript([userItem(1, "go"), cut])} turn={null} serverStreaming stopping={false} status={{}}
      onDecide={vi.fn()} cardRef={() => () => {}} onRetry={vi.fn()} retryError={null} />);
    expect(screen.queryByRole("button", { name: "Retry" })).toBeNull();
  });
});

describe("buildRows", () => {
  it("keeps the transcript's order, puts what is not stored yet last, and drops streamed text once its item is stored", () => {
    const a = approval("mcpr_1", "delete_forecast");
    const tr = transcript([userItem(1, "go"), approvalItem(2, a), { seq: 3, type: "message", id: "msg_1", created_at: "t", text: "done" }]);
    const { rows, groups } = buildRows(tr, liveTurn({ pendingInput: "next", texts: [{ itemId: "msg_1", text: "do" }, { itemId: "msg_2", text: "more" }] }));
    expect(rows.map((r) => r.kind)).toEqual(["item", "approval", "item", "pending_user", "text"]);
    expect(groups.get("resp_1")).toMatchObject({ total: 1, decided: 0 });
  });
});
