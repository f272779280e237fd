import { act, render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import i18n from "../i18n";
import type { Approval } from "../api/types";
import { ApprovalCard } from "./ApprovalCard";

function approval(over: Partial<Approval> = {}): Approval {
  return {
    approval_request_id: "mcpr_1",
    conversation_id: "conv_1",
    response_id: "resp_1",
    server_label: "demo",
    upstream_label: "demo",
    tool_name: "send_alert",
    arguments: { api_token: "[redacted]", city: "Berlin", message: "storm", nested: { retries: 2, tags: ["a"] } },
    redacted: ["api_token"],
    annotations: { title: "Send weather alert", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    asks_because: { policy: "always", source: "tool" },
    requested_at: "2026-11-21T09:54:01Z",
    state: "pending",
    decided_at: null,
    decided_by: null,
    decided_by_id: null,
    reason: null,
    scope: null,
    remember: false,
    answered_in: null,
    expires_at: null,
    correction: null,
    corrects: null,
    ...over,
  };
}

function setup(props: Partial<Parameters<typeof ApprovalCard>[0]> = {}) {
  const onDecide = vi.fn();
  const user = userEvent.setup();
  const utils = render(<ApprovalCard approval={approval()} busy={false} onDecide={onDecide} {...props} />);
  const card = screen.getByRole("article", { name: "Approval request: send_alert on demo" });
  return { ...utils, onDecide, user, card };
}

describe("ApprovalCard", () => {
  it("shows the server, the tool, its title, and the arguments as pretty JSON", () => {
    const { card } = setup();
    expect(within(card).getByRole("heading", { name: "send_alert on demo" })).toBeInTheDocument();
    expect(within(card).getByText("Send weather alert")).toBeInTheDocument();
    const args = within(card).getByRole("region", { name: "Arguments" }).querySelector("pre")!;
    expect(args.textContent).toBe(
      '{\n  "api_token": hidden (redacted value),\n  "city": "Berlin",\n  "message": "storm",\n  "nested": {\n    "retries": 2,\n    "tags": [\n      "a"\n    ]\n  }\n}',
    );
  });

  it("marks redacted values as hidden instead of showing the placeholder, and names their paths", () => {
    const { card } = setup();
    expect(card.textContent).not.toContain("[redacted]");
    const chip = within(card).getByText("hidden");
    expect(chip).toHaveClass("redacted-chip");
    const note = within(card).getByText(/Hidden by Toolgate/);
    expect(within(note).getByText("api_token")).toBeInTheDocument();
  });

  it("does not hide a value that merely reads [redacted] when its path was not redacted", () => {
    setup({ approval: approval({ arguments: { message: "[redacted]" }, redacted: [] }) });
    expect(screen.queryByText("hidden")).toBeNull();
    expect(screen.getByText('"[redacted]"')).toBeInTheDocument();
    expect(screen.queryByText(/Hidden by Toolgate/)).toBeNull();
  });

  it("shows the MCP hints as badges, and only the true ones", () => {
    const { card } = setup();
    const hints = within(card).getByRole("list", { name: "Hints from the MCP server" });
    expect(within(hints).getByText("destructive")).toHaveClass("badge", "destructive");
    expect(within(hints).getByText("open-world")).toHaveClass("badge", "open-world");
    expect(within(hints).queryByText("read-only")).toBeNull();
  });

  it("shows read-only for a read-only tool, and no badges for a tool without hints", () => {
    const { unmount } = setup({ approval: approval({ annotations: { readOnlyHint: true } }) });
    expect(screen.getByText("read-only")).toHaveClass("badge", "read-only");
    unmount();
    setup({ approval: approval({ annotations: {} }) });
    expect(screen.queryByRole("list", { name: "Hints from the MCP server" })).toBeNull();
  });

  it.each([
    ["tool", "Asks because this tool's policy is Ask"],
    ["server", "Asks because the server default is Ask"],
    ["global", "Asks because the global default is Ask"],
    ["unknown", "Asks because Toolgate has not seen this tool before (unknown tools always ask)"],
  ] as const)("says why it asks (%s)", (source, text) => {
    setup({ approval: approval({ asks_because: { policy: "always", source } }) });
    expect(screen.getByText(`${text}.`)).toBeInTheDocument();
  });

  it.each([
    [{ source: "global", reason: "not_read_only" }, "Asks because it is not read-only"],
    [{ source: "new", reason: "new_tool" }, "New: asks until someone sets its policy"],
    [{ source: "changed", reason: "changed", fields: ["description", "input_schema"] }, "Changed since you allowed it: description, input schema"],
    [{ source: "changed", reason: "read_only_changed" }, "Says it is read-only, but changed after it was first seen: asks until someone sets its policy"],
    [{ source: "locked", reason: "policy" }, "Asks because an admin locked this tool at Ask"],
    [{ source: "user", reason: "policy" }, "Asks because your own policy for this tool is Ask"],
  ] as const)("says why it asks with the API's reason (%j)", (why, text) => {
    setup({ approval: approval({ asks_because: { policy: "always", ...why, fields: "fields" in why ? [...why.fields] : undefined } }) });
    expect(screen.getByText(`${text}.`)).toBeInTheDocument();
  });

  it.each([
    ["Approve once", { approve: true }],
    ["Approve for this conversation", { approve: true, scope: "conversation" }],
    ["Approve for 1 hour", { approve: true, scope: "hour" }],
    ["Approve always (remember)", { approve: true, remember: true }],
  ] as const)("the Approve menu's %s sends exactly that", async (item, sent) => {
    const { user, onDecide } = setup();
    await user.click(screen.getByRole("button", { name: "More approval choices" }));
    await user.click(screen.getByRole("menuitem", { name: (n: string) => n.startsWith(item) }));
    expect(onDecide).toHaveBeenCalledTimes(1);
    expect(onDecide).toHaveBeenCalledWith({ approval_request_id: "mcpr_1", ...sent });
  });

  it.each([
    ["Deny once", { approve: false }],
    ["Deny always (block)", { approve: false, remember: true }],
  ] as const)("the Deny menu's %s sends exactly that, never a scope", async (item, sent) => {
    const { user, onDecide } = setup();
    await user.click(screen.getByRole("button", { name: "More denial choices" }));
    expect(screen.getAllByRole("menuitem")).toHaveLength(3); // and Stop (stopBatch.test.tsx)
    await user.click(screen.getByRole("menuitem", { name: (n: string) => n.startsWith(item) }));
    expect(onDecide).toHaveBeenCalledWith({ approval_request_id: "mcpr_1", ...sent });
  });

  it("each menu item says what it does, in its name", async () => {
    const { user } = setup();
    await user.click(screen.getByRole("button", { name: "More approval choices" }));
    expect(screen.getAllByRole("menuitem").map((m) => m.textContent)).toEqual([
      "Approve onceRuns this call; send_alert asks again next time",
      "Approve for this conversationsend_alert runs without asking for the rest of this conversation",
      "Approve for 1 hoursend_alert runs without asking in all your conversations for the next hour",
      "Approve always (remember)Never ask you again for send_alert (your own policy; others are not affected)",
    ]);
    expect(screen.getByRole("menuitem", { name: /^Approve for 1 hour send_alert runs without asking in all your conversations/ })).toBeInTheDocument();
  });

  it("the menu works by keyboard: arrows move, Escape closes and returns focus, Enter picks", async () => {
    const { user, onDecide } = setup();
    const toggle = screen.getByRole("button", { name: "More approval choices" });
    expect(toggle).toHaveAttribute("aria-haspopup", "menu");
    expect(toggle).toHaveAttribute("aria-expanded", "false");
    toggle.focus();
    await user.keyboard("{ArrowDown}");
    expect(toggle).toHaveAttribute("aria-expanded", "true");
    expect(screen.getByRole("menuitem", { name: /^Approve once/ })).toHaveFocus();
    await user.keyboard("{ArrowDown}");
    expect(screen.getByRole("menuitem", { name: /^Approve for this conversation/ })).toHaveFocus();
    await user.keyboard("{End}");
    expect(screen.getByRole("menuitem", { name: /^Approve always \(remember\)/ })).toHaveFocus();
    await user.keyboard("{ArrowDown}");
    expect(screen.getByRole("menuitem", { name: /^Approve once/ })).toHaveFocus();
    await user.keyboard("{Escape}");
    expect(screen.queryByRole("menu")).toBeNull();
    expect(toggle).toHaveFocus();
    expect(onDecide).not.toHaveBeenCalled();
    await user.keyboard("{ArrowUp}");
    expect(screen.getByRole("menuitem", { name: /^Approve always \(remember\)/ })).toHaveFocus();
    await user.keyboard("{ArrowUp}{Enter}");
    expect(onDecide).toHaveBeenCalledWith({ approval_request_id: "mcpr_1", approve: true, scope: "hour" });
  });

  it("Deny with a reason sends the trimmed reason", async () => {
    const { user, onDecide } = setup();
    await user.type(screen.getByRole("textbox", { name: "Reason (optional, sent to the model)" }), "  not Berlin, it is calm  ");
    await user.click(screen.getByRole("button", { name: "Deny" }));
    expect(onDecide).toHaveBeenCalledWith({ approval_request_id: "mcpr_1", approve: false, reason: "not Berlin, it is calm" });
  });

  it("is disabled while busy and sends nothing", async () => {
    const { user, onDecide } = setup({ busy: true, busyText: "Sending your decision…" });
    expect(screen.getByRole("button", { name: "Approve" })).toBeDisabled();
    expect(screen.getByRole("button", { name: "Deny" })).toBeDisabled();
    expect(screen.getByRole("button", { name: "More approval choices" })).toBeDisabled();
    expect(screen.getByRole("button", { name: "More denial choices" })).toBeDisabled();
    expect(screen.getByRole("textbox", { name: "Reason (optional, sent to the model)" })).toBeDisabled();
    expect(screen.getByRole("status")).toHaveTextContent("Sending your decision…");
    await user.click(screen.getByRole("button", { name: "Approve" }));
    expect(onDecide).not.toHaveBeenCalled();
  });

  it("sends one decision for a double click, and disables both buttons after it", async () => {
    const { user, onDecide } = setup();
    await user.dblClick(screen.getByRole("button", { name: "Approve" }));
    await user.click(screen.getByRole("button", { name: "Deny" }));
    expect(onDecide).toHaveBeenCalledTimes(1);
    expect(screen.getByRole("button", { name: "Approve" })).toBeDisabled();
    expect(screen.getByRole("button", { name: "Deny" })).toBeDisabled();
  });

  it("shows the server's refusal and lets the person decide again", async () => {
    const onDecide = vi.fn();
    const user = userEvent.setup();
    const a = approval();
    const { rerender } = render(<ApprovalCard approval={a} busy={false} onDecide={onDecide} />);
    await user.click(screen.getByRole("button", { name: "Approve" }));
    rerender(<ApprovalCard approval={a} busy={false} onDecide={onDecide} error="send_alert on demo is blocked; deny it, or approve with Remember for this tool" />);
    expect(screen.getByRole("alert")).toHaveTextContent("send_alert on demo is blocked; deny it, or approve with Remember for this tool");
    expect(screen.getByRole("button", { name: "Approve" })).toBeEnabled();
    await user.click(screen.getByRole("button", { name: "More approval choices" }));
    await user.click(screen.getByRole("menuitem", { name: /^Approve always \(remember\)/ }));
    expect(onDecide).toHaveBeenCalledTimes(2);
    expect(onDecide).toHaveBeenLastCalledWith({ approval_request_id: "mcpr_1", approve: true, remember: true });
  });

  it("can be decided with the keyboard alone", async () => {
    const { user, onDecide, card } = setup();
    card.focus();
    await user.tab(); // Reason
    await user.keyboard("ok for now");
    await user.tab(); // Approve
    expect(screen.getByRole("button", { name: "Approve" })).toHaveFocus();
    await user.tab(); // Approve ▾
    expect(screen.getByRole("button", { name: "More approval choices" })).toHaveFocus();
    await user.keyboard("{Enter}");
    await user.keyboard("{ArrowDown}{Enter}");
    expect(onDecide).toHaveBeenCalledWith({ approval_request_id: "mcpr_1", approve: true, scope: "conversation", reason: "ok for now" });
  });

  it("lets the person decide again when the page is done sending and the request is still pending", async () => {
    const onDecide = vi.fn();
    const user = userEvent.setup();
    const a = approval();
    const { rerender } = render(<ApprovalCard approval={a} busy={false} onDecide={onDecide} />);
    await user.click(screen.getByRole("button", { name: "Deny" }));
    rerender(<ApprovalCard approval={a} busy onDecide={onDecide} busyText="Sending your decision…" />);
    expect(screen.getByRole("button", { name: "Approve" })).toBeDisabled();
    rerender(<ApprovalCard approval={a} busy={false} onDecide={onDecide} />);
    expect(screen.getByRole("button", { name: "Approve" })).toBeEnabled();
  });

  it("reads in German: Bestätigung erforderlich, Genehmigen, Ablehnen, Immer ablehnen (blockieren)", async () => {
    await i18n.changeLanguage("de");
    const onDecide = vi.fn();
    const user = userEvent.setup();
    render(<ApprovalCard approval={approval({ asks_because: { policy: "always", source: "changed", reason: "changed", fields: ["description", "input_schema"] } })} busy={false} onDecide={onDecide} />);
    const card = screen.getByRole("article", { name: "Bestätigungsanfrage: send_alert auf demo" });
    expect(within(card).getByText("Bestätigung erforderlich")).toBeInTheDocument();
    expect(within(card).getByText("Geändert, seit Sie es erlaubt haben: Beschreibung, Eingabeschema.")).toBeInTheDocument();
    expect(within(card).getByRole("list", { name: "Hinweise des MCP-Servers" })).toHaveTextContent("destruktiv");
    expect(within(card).getByRole("region", { name: "Argumente" })).toHaveTextContent("verborgen");
    await user.click(within(card).getByRole("button", { name: "Weitere Ablehnungsoptionen" }));
    await user.click(within(card).getByRole("menuitem", { name: /^Immer ablehnen \(blockieren\)/ }));
    expect(onDecide).toHaveBeenCalledWith({ approval_request_id: "mcpr_1", approve: false, remember: true });
    expect(within(card).getByRole("button", { name: "Genehmigen" })).toBeDisabled();
  });

  it("counts down to expires_at, then says it expired (APPROVAL_TTL)", () => {
    vi.useFakeTimers({ toFake: ["setInterval", "Date"] });
    try {
      const expiresAt = new Date(Date.now() + (12 * 60 + 34) * 1000).toISOString();
      render(<ApprovalCard approval={approval({ expires_at: expiresAt })} busy={false} onDecide={vi.fn()} />);
      const card = screen.getByRole("article", { name: "Approval request: send_alert on demo" });
      expect(within(card).getByText("Expires in 12:34")).toBeInTheDocument();
      act(() => { vi.advanceTimersByTime(4000); });
      expect(within(card).getByText("Expires in 12:30")).toBeInTheDocument();
      act(() => { vi.advanceTimersByTime(750 * 1000); });
      expect(within(card).getByText("Expired: nobody decided in time")).toBeInTheDocument();
    } finally {
      vi.useRealTimers();
    }
  });

  it("shows no countdown without expires_at, and hours past the first one", () => {
    const { card, unmount } = setup();
    expect(within(card).queryByText(/Expires in/)).toBeNull();
    unmount();
    render(<ApprovalCard approval={approval({ expires_at: new Date(Date.now() + 2 * 3600 * 1000 + 5 * 60 * 1000 + 30 * 1000).toISOString() })} busy={false} onDecide={vi.fn()} />);
    expect(screen.getByText(/^Expires in 2:05:(29|30)$/)).toBeInTheDocument();
  });

  it("counts down in German: Läuft ab in …, then Abgelaufen", async () => {
    await i18n.changeLanguage("de");
    vi.useFakeTimers({ toFake: ["setInterval", "Date"] });
    try {
      render(<ApprovalCard approval={approval({ expires_at: new Date(Date.now() + 65 * 1000).toISOString() })} busy={false} onDecide={vi.fn()} />);
      expect(screen.getByText("Läuft ab in 1:05")).toBeInTheDocument();
      act(() => { vi.advanceTimersByTime(66 * 1000); });
      expect(screen.getByText("Abgelaufen: niemand hat rechtzeitig entschieden")).toBeInTheDocument();
    } finally {
      vi.useRealTimers();
    }
  });

  it("shows an admin's lock at Ask and offers only Approve once and the denials", async () => {
    const { card, onDecide, user } = setup({ approval: approval({ asks_because: { policy: "always", source: "locked", reason: "policy" }, ask_lock: "tool" }) });
    expect(within(card).getByText(/An admin locked this tool at Ask: every call asks, so it can only be approved once/)).toBeInTheDocument();
    // No way to approve for a while or always: no approval menu, no such choice anywhere on the card.
    expect(within(card).queryByRole("button", { name: "More approval choices" })).toBeNull();
    expect(card.textContent).not.toMatch(/for this conversation|for 1 hour|Approve always/);
    await user.click(within(card).getByRole("button", { name: "More denial choices" }));
    expect(screen.getAllByRole("menuitem").map((m) => m.querySelector(".menu-label")?.textContent)).toEqual(["Deny once", "Deny always (block)", "Stop"]);
    await user.keyboard("{Escape}");
    await user.click(within(card).getByRole("button", { name: "Approve once" }));
    expect(onDecide).toHaveBeenCalledWith({ approval_request_id: "mcpr_1", approve: true });
  });

  it("names the level of the lock, and says why a claimed read-only hint asks", async () => {
    const { unmount } = setup({ approval: approval({ ask_lock: "server" }) });
    expect(screen.getByText(/An admin locked this server's default at Ask/)).toBeInTheDocument();
    unmount();
    setup({ approval: approval({ asks_because: { policy: "always", source: "global", reason: "read_only_claimed" }, ask_lock: null }) });
    expect(screen.getByText(/no admin has accepted its server's read-only hints yet/)).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "More approval choices" })).toBeInTheDocument();
    await i18n.changeLanguage("de");
    try {
      expect(screen.getByText(/noch kein Admin hat die Nur-lesend-Angaben/)).toBeInTheDocument();
    } finally {
      await i18n.changeLanguage("en");
    }
  });

  it("shows the tool's approval text as plain text above the arguments, markup escaped", () => {
    const { card } = setup({ approval: approval({ approval_text: "Send <b>storm</b> alert for Berlin (key [redacted])" }) });
    const text = card.querySelector(".approval-text")!;
    expect(text.textContent).toBe("Send <b>storm</b> alert for Berlin (key [redacted])");
    expect(text.querySelector("b")).toBeNull();
    // Above the arguments.
    const args = within(card).getByRole("region", { name: "Arguments" });
    expect(text.compareDocumentPosition(args) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
  });

  it("offers only the choices an admin left the tool: Approve once, Deny (and Stop, a denial), no correction", async () => {
    const { card, onDecide, user } = setup({ approval: approval({ choices: ["approve_once", "deny"] }) });
    expect(within(card).getByText("An admin limited the choices for this tool.")).toBeInTheDocument();
    expect(within(card).queryByRole("button", { name: "More approval choices" })).toBeNull();
    await user.click(within(card).getByRole("button", { name: "More denial choices" }));
    expect(screen.getAllByRole("menuitem").map((m) => m.querySelector(".menu-label")?.textContent)).toEqual(["Deny once", "Stop"]);
    await user.keyboard("{Escape}");
    expect(within(card).queryByRole("button", { name: "Deny with correction…" })).toBeNull();
    expect(card.textContent).not.toMatch(/for this conversation|for 1 hour|always/i);
    await user.click(within(card).getByRole("button", { name: "Deny" }));
    expect(onDecide).toHaveBeenCalledWith({ approval_request_id: "mcpr_1", approve: false });
  });

  it("hides the menu items of choices not allowed", async () => {
    const { card, user } = setup({ approval: approval({ choices: ["approve_once", "approve_hour", "deny_with_correction"] }) });
    await user.click(within(card).getByRole("button", { name: "More approval choices" }));
    expect(screen.getAllByRole("menuitem").map((m) => m.querySelector(".menu-label")?.textContent)).toEqual(["Approve once", "Approve for 1 hour"]);
    await user.keyboard("{Escape}");
    expect(within(card).queryByRole("button", { name: "More denial choices" })).toBeNull();
    expect(within(card).getByRole("button", { name: "Deny with correction…" })).toBeInTheDocument();
  });
});
