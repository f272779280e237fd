import { describe, expect, it } from "vitest";
import { advance, newTurn } from "./liveTurn";
import { approval, approvalItem, callItem, transcript, userItem } from "./testutil";
import { awaitingRun, outcomeOf, withApproval, withDecision, withItem, withTurnEnd } from "./transcript";

const decided = (id: string, over: object = {}) => ({
  approval_request_id: id, server_label: "demo", tool_name: "t", state: "approved" as const, reason: null, scope: "once" as const,
  remember: false, policy_changed: null, decided_at: "t", pending_approval_ids: [], ...over,
});

describe("the cached transcript follows the stream as the server stores it", () => {
  it("an approval request is the next item and pending; its decision changes it in place", () => {
    const a = approval("mcpr_1", "delete_forecast");
    let tr = withApproval(transcript([userItem(1, "go")]), a);
    expect(tr.items.map((i) => [i.seq, i.type, i.id])).toEqual([[1, "user_message", "u1"], [2, "mcp_approval_request", "mcpr_1"]]);
    expect(tr.conversation.pending_approvals).toBe(1);
    expect(withApproval(tr, a)).toBe(tr);
    tr = withDecision(tr, decided("mcpr_1", { state: "denied", reason: "no" }));
    expect(tr.pending_approvals).toEqual([]);
    expect(tr.items[1]).toMatchObject({ approval: { state: "denied", reason: "no" } });
  });

  it("a pending request the items lack keeps a place once decided", () => {
    const a = approval("mcpr_1", "delete_forecast");
    const tr = withDecision({ ...transcript([userItem(1, "go")]), pending_approvals: [a] }, decided("mcpr_1"));
    expect(tr.items.at(-1)).toMatchObject({ type: "mcp_approval_request", approval: { state: "approved" } });
  });

  it("the same item again replaces it", () => {
    const tr = withItem(withItem(transcript([]), callItem(1, "x", { output: "a" })), callItem(1, "x", { output: "b" }));
    expect(tr.items).toHaveLength(1);
    expect(tr.items[0]).toMatchObject({ output: "b" });
  });

  it("a turn that did not complete: partial text, then the error item; the turn is over", () => {
    const tr = withTurnEnd(transcript([userItem(1, "go")], { streaming: true }), { code: "cancelled", message: "stopped", retryable: false }, [{ itemId: "msg_1", text: "Hal" }]);
    expect(tr.conversation.streaming).toBe(false);
    expect(tr.items.slice(1)).toMatchObject([{ seq: 2, type: "message", partial: true, text: "Hal" }, { seq: 3, type: "error", turn_error: { code: "cancelled" } }]);
  });
});

describe("whether an approved tool ran", () => {
  const a = approval("mcpr_1", "delete_forecast", { state: "approved" });
  it.each([
    ["its call is there", [approvalItem(1, a), callItem(2, "delete_forecast", { approval_request_id: "mcpr_1" })], a, "ran"],
    ["its answer went upstream, no call came back", [approvalItem(1, { ...a, answered_in: "resp_9" })], { ...a, answered_in: "resp_9" }, "unknown"],
    ["its answer never went upstream", [approvalItem(1, a)], a, "not_sent"],
    ["another request of the response is open", [approvalItem(1, a), approvalItem(2, approval("mcpr_2", "send_alert"))], a, "waiting"],
    ["it was denied", [approvalItem(1, { ...a, state: "denied" })], { ...a, state: "denied" as const }, "not_run"],
  ] as const)("%s", (_, items, which, outcome) => {
    expect(outcomeOf(transcript([...items]), which)).toBe(outcome);
  });
});

describe("the live turn", () => {
  it("a retry that sends recorded decisions runs the approved tools never sent", () => {
    const a = approval("mcpr_1", "delete_forecast", { state: "approved" });
    const tr = transcript([approvalItem(1, a)]);
    const t = advance(newTurn({ kind: "retry", conversationId: "conv_1" }),
      { event: "conversation", id: 1, data: { conversation_id: "conv_1", turn_id: "t", kind: "decisions", offline: true, model: "m" } }, tr, 42);
    expect(t.running).toEqual(awaitingRun(tr, null, 42));
    expect(t.running).toEqual([{ approvalId: "mcpr_1", tool: "delete_forecast", server: "demo", since: 42 }]);
  });

  it("nothing runs while other requests of the response still wait", () => {
    const a = approval("mcpr_1", "delete_forecast", { state: "approved" });
    const tr = transcript([approvalItem(1, a), approvalItem(2, approval("mcpr_2", "send_alert"))]);
    const t = advance(newTurn({ kind: "decisions", conversationId: "conv_1", decisions: [] }),
      { event: "decision.recorded", id: 2, data: decided("mcpr_1", { pending_approval_ids: ["mcpr_2"] }) }, tr, 1);
    expect(t.running).toEqual([]);
  });
});
