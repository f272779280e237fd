// Stop: the card lists the other calls of the response that wait after this
// one, and its Stop denies them with this one; the transcript says the turn
// ended because the person stopped it.
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import "../i18n";
import type { Approval } from "../api/types";
import { ApprovalCard } from "./ApprovalCard";
import { othersInBatch } from "./BatchList";
import { DecidedApproval, TurnErrorRow } from "./items";

function approval(id: string, over: Partial<Approval> = {}): Approval {
  return {
    approval_request_id: id, conversation_id: "conv_1", response_id: "resp_1", server_label: "demo", upstream_label: "demo",
    tool_name: "delete_forecast", arguments: { city: id }, redacted: [], annotations: {},
    asks_because: { policy: "always", source: "tool" }, requested_at: "2026-11-21T09:54:01Z", state: "pending",
    decided_at: null, decided_by: null, decided_by_id: null, reason: null, scope: null, remember: false, answered_in: null,
    expires_at: null, correction: null, corrects: null, ...over,
  };
}

describe("Stop", () => {
  it("finds the other pending requests of the same response, in order, never this one", () => {
    const a = approval("a"), b = approval("b"), c = approval("c", { tool_name: "send_alert" });
    const done = approval("d", { state: "approved" }), elsewhere = approval("e", { response_id: "resp_2" });
    expect(othersInBatch(b, [a, b, c, done, elsewhere]).map((x) => x.approval_request_id)).toEqual(["a", "c"]);
    expect(othersInBatch(a, [a])).toEqual([]);
  });

  it("lists the calls that wait after this one with their tools and arguments, and Stop denies with the reason", async () => {
    const onDecide = vi.fn();
    const user = userEvent.setup();
    const others = [approval("Lisbon"), approval("Rome", { tool_name: "send_alert", arguments: { api_token: "[redacted]", text: "hi" }, redacted: ["api_token"] })];
    render(<ApprovalCard approval={approval("Oslo")} busy={false} others={others} onDecide={onDecide} />);
    const card = screen.getByRole("article");
    const batch = within(card).getByRole("region", { name: "2 more calls wait after this one" });
    const items = within(batch).getAllByRole("listitem");
    expect(items.map((li) => li.querySelector(".approval-batch-tool")?.textContent)).toEqual(["delete_forecast on demo", "send_alert on demo"]);
    expect(items[0].querySelector("pre")?.textContent).toBe('{\n  "city": "Lisbon"\n}');
    expect(items[1].textContent).not.toContain("[redacted]"); // hidden as on its own card
    await user.type(within(card).getByLabelText("Reason (optional, sent to the model)"), "  wrong plan ");
    await user.click(within(card).getByRole("button", { name: "More denial choices" }));
    const stop = screen.getByRole("menuitem", { name: /^Stop/ });
    expect(stop).toHaveTextContent("Deny this call and the 2 others waiting, with your reason; the model gets no turn until your next message");
    await user.click(stop);
    expect(onDecide).toHaveBeenCalledTimes(1);
    expect(onDecide).toHaveBeenCalledWith({ approval_request_id: "Oslo", approve: false, reason: "wrong plan", stop: true });
  });

  it("alone in its batch: no list, and Stop still offered; plain Deny never stops", async () => {
    const onDecide = vi.fn();
    const user = userEvent.setup();
    render(<ApprovalCard approval={approval("Oslo")} busy={false} onDecide={onDecide} />);
    expect(screen.queryByText(/more calls? waits?/)).toBeNull();
    await user.click(screen.getByRole("button", { name: "Deny" }));
    expect(onDecide).toHaveBeenLastCalledWith({ approval_request_id: "Oslo", approve: false });
  });

  it("the transcript says the person stopped, calmly, without Retry; the decided rows say stopped", () => {
    const { container } = render(<>
      <TurnErrorRow error={{ code: "stopped_by_user", message: "you stopped the turn: 3 tool call(s) denied", retryable: false }} />
      <DecidedApproval approval={approval("Oslo", { state: "denied", stopped: true, reason: "wrong plan", decided_at: "2026-11-21T09:55:01Z" })} />
    </>);
    expect(screen.getByText("You stopped here.")).toBeInTheDocument();
    expect(screen.getByText(/your denials go with your next message/)).toBeInTheDocument();
    expect(container.querySelector(".alert.info")).not.toBeNull();
    expect(container.querySelector(".alert.error")).toBeNull();
    expect(screen.queryByRole("button", { name: "Retry" })).toBeNull();
    expect(screen.getByText("stopped: the model got no turn")).toBeInTheDocument();
  });
});
