import { describe, expect, it } from "vitest";
import type { ChatEvent } from "../api/events";
import { keys, newTestQueryClient } from "../api/query";
import type { Transcript } from "../api/types";
import { feedOf } from "./conversationFeed";
import { approval, approvalItem, transcript, userItem } from "./testutil";

const ev = (id: number, event: string, data: unknown) => ({ id, event, data }) as ChatEvent;
const opened = (id: number) => ev(id, "conversation", { conversation_id: "conv_1", turn_id: "turn_2", kind: "message", offline: true, model: "m" });
const delta = (id: number, text: string) => ev(id, "text.delta", { item_id: "msg_1", response_id: "r", delta: text });
const cut = (id: number) => ev(id, "error", { code: "interrupted", message: "the replica running this turn stopped", retryable: true });

function setup(tr: Transcript) {
  const qc = newTestQueryClient();
  qc.setQueryData(keys.conversation("conv_1"), tr);
  const feed = feedOf(qc, "conv_1");
  return { qc, feed, cached: () => qc.getQueryData<Transcript>(keys.conversation("conv_1"))! };
}

describe("ConversationFeed", () => {
  it("applies an event once, whichever stream brings it first (the same id twice changes nothing)", () => {
    const { feed, cached } = setup(transcript([userItem(1, "hi")], { last_event_id: 3 }));
    expect(feed.accept(opened(4))).toBe(true);
    expect(feed.accept(delta(5, "Hel"))).toBe(true);
    expect(feed.accept(delta(5, "Hel"))).toBe(false);
    expect(feed.accept(delta(6, "lo"))).toBe(true);
    expect(feed.live()?.texts).toEqual([{ itemId: "msg_1", text: "Hello" }]);
    expect(feed.accept(cut(7))).toBe(true);
    expect(feed.accept(cut(7))).toBe(false);
    // One error item, and the text that streamed kept as a partial message, as the server keeps it.
    expect(cached().items.map((i) => i.type)).toEqual(["user_message", "message", "error"]);
    expect(cached().items[1]).toMatchObject({ id: "msg_1", text: "Hello", partial: true });
    expect(cached().conversation.streaming).toBe(false);
    expect(feed.live()?.phase).toBe("ended");
  });

  it("an event the last read holds (id ≤ last_event_id) moves the live view but is not stored again", () => {
    const { feed, cached } = setup(transcript([userItem(1, "hi"), { seq: 2, type: "error", id: "err_1", created_at: "t",
      turn_error: { code: "interrupted", message: "x", retryable: true } }], { last_event_id: 9 }));
    // A reload mid-answer replays the running turn from its first event: its text shows again.
    feed.accept(opened(4));
    feed.accept(delta(5, "So far"));
    expect(feed.live()?.texts).toEqual([{ itemId: "msg_1", text: "So far" }]);
    feed.accept(cut(9));
    expect(cached().items.filter((i) => i.type === "error")).toHaveLength(1);
  });

  it("a read that lands after events holds them: events after its last_event_id go on top of it", () => {
    const a = approval("mcpr_1", "delete_forecast");
    const { feed } = setup(transcript([userItem(1, "hi")], { last_event_id: 3 }));
    feed.accept(opened(4));
    feed.accept(ev(5, "approval.required", a));
    feed.accept(ev(6, "completed", { response_id: "r", pending_approvals: 1, pending_approval_ids: ["mcpr_1"], sent: true }));
    // This read was taken after event 4, before 5 and 6.
    const read = feed.reconcile(transcript([userItem(1, "hi")], { last_event_id: 4, streaming: true }));
    expect(read.pending_approvals.map((p) => p.approval_request_id)).toEqual(["mcpr_1"]);
    expect(read.conversation.streaming).toBe(false);
    // A read that holds them all is taken as it is.
    const whole = transcript([userItem(1, "hi"), approvalItem(2, a)], { last_event_id: 6 });
    expect(feed.reconcile(whole)).toBe(whole);
  });

  it("ignores a read older than the newest one it has applied", () => {
    const { feed, qc } = setup(transcript([userItem(1, "hi")], { last_event_id: 3 }));
    const newer = transcript([userItem(1, "hi"), userItem(2, "again")], { last_event_id: 8 });
    qc.setQueryData(keys.conversation("conv_1"), feed.reconcile(newer));
    expect(feed.reconcile(transcript([userItem(1, "hi")], { last_event_id: 5 }))).toEqual(newer);
  });

  it("says who decided, and a read that says no turn runs ends a live view that saw nothing newer", () => {
    const a = approval("mcpr_1", "delete_forecast");
    const { feed, cached } = setup(transcript([userItem(1, "go"), approvalItem(2, a)], { last_event_id: 3 }));
    feed.accept(opened(4));
    feed.accept(ev(5, "decision.recorded", {
      approval_request_id: "mcpr_1", server_label: "demo", tool_name: "delete_forecast", state: "approved", reason: null, scope: "once",
      remember: false, policy_changed: null, decided_at: "t", decided_by: "alice@example.com", decided_by_id: "usr_a", pending_approval_ids: [],
    }));
    const decided = cached().items.find((i) => i.type === "mcp_approval_request");
    expect(decided).toMatchObject({ approval: { state: "approved", decided_by: "alice@example.com", decided_by_id: "usr_a" } });
    expect(cached().pending_approvals).toEqual([]);
    expect(feed.live()?.phase).toBe("streaming");
    feed.reconcile(transcript([userItem(1, "go"), approvalItem(2, { ...a, state: "approved" })], { last_event_id: 7, streaming: false }));
    expect(feed.live()?.phase).toBe("ended");
  });
});
