import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError, api } from "../api/client";
import type { Server, Tool } from "../api/types";
import { ToolRow, type ToolRowProps } from "./ToolRow";

const server: Server = {
  label: "demo", url: "http://127.0.0.1:8290/mcp", description: "", headers: {}, default_policy: null, enabled: true,
  created_at: "", updated_at: "", tools_refreshed_at: null, tools_refresh_error: null, tool_count: 1,
};
const destructive = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false };
const tool = (over: Partial<Tool> = {}): Tool => ({
  name: "delete_forecast", description: "Deletes a forecast", input_schema: {}, annotations: destructive,
  server_id: "demo", discovered: true, first_seen_at: null, definition_changed_at: null,
  policy: null, policy_locked: false, user_policy: null, locked: false,
  effective_policy: "always", policy_source: "global", asks_because: { reason: "not_read_only" }, changed: null,
  policy_updated_at: null, policy_updated_by: null, ...over,
});

function renderRow(over: Partial<ToolRowProps> = {}) {
  const props: ToolRowProps = {
    tool: tool(), server, globalDefault: "ask_unless_read_only", admin: true, now: Date.now(), highlight: false,
    claimFocus: () => false, onToolChanged: vi.fn(), reload: vi.fn(async () => undefined), ...over,
  };
  render(<ul><ToolRow {...props} /></ul>);
  return props;
}

afterEach(() => vi.restoreAllMocks());

describe("ToolRow", () => {
  it("an admin sets the workspace policy (layer workspace) and mine (layer user) separately", async () => {
    const user = userEvent.setup();
    const set = vi.spyOn(api, "setPolicy").mockImplementation(async () => tool({ policy: "always" }));
    const props = renderRow();
    const workspace = screen.getByRole("radiogroup", { name: "Policy for delete_forecast" });
    // The default resolves per tool: not read-only, so Ask.
    expect(within(workspace).getByRole("radio", { name: "Use default" })).toHaveAccessibleDescription("(Ask, global default)");
    await user.click(within(workspace).getByRole("radio", { name: "Ask" }));
    expect(set).toHaveBeenLastCalledWith("demo", "delete_forecast", "always", "workspace", false);
    expect(props.onToolChanged).toHaveBeenCalled();

    const mine = screen.getByRole("radiogroup", { name: "My policy for delete_forecast" });
    await user.click(within(mine).getByRole("radio", { name: "Blocked" }));
    expect(set).toHaveBeenLastCalledWith("demo", "delete_forecast", "blocked", "user");
  });

  it("an admin locks a tool's own policy, and cannot lock Use default", async () => {
    const user = userEvent.setup();
    const set = vi.spyOn(api, "setPolicy").mockImplementation(async () => tool({ policy: "always", policy_locked: true, locked: true }));
    renderRow({ tool: tool({ policy: "always", policy_source: "tool" }) });
    await user.click(screen.getByRole("checkbox", { name: "Lock the policy for delete_forecast" }));
    expect(set).toHaveBeenCalledWith("demo", "delete_forecast", "always", "workspace", true);
    screen.getByRole("checkbox", { name: "Lock the policy for delete_forecast" });
  });

  it("the lock is disabled while the tool has no workspace policy of its own", () => {
    renderRow();
    expect(screen.getByRole("checkbox", { name: "Lock the policy for delete_forecast" })).toBeDisabled();
  });

  it("a member sees the workspace policy read-only; a lock disables only the looser personal options and says why", () => {
    renderRow({ admin: false, tool: tool({ policy: "always", policy_locked: true, locked: true, policy_source: "locked", asks_because: { reason: "policy" } }) });
    expect(screen.queryByRole("radiogroup", { name: "Policy for delete_forecast" })).toBeNull();
    expect(screen.queryByRole("checkbox", { name: /Lock/ })).toBeNull();
    expect(screen.getByLabelText("Workspace policy for delete_forecast")).toHaveTextContent("Ask (set for this tool) locked");
    const mine = screen.getByRole("radiogroup", { name: "My policy for delete_forecast" });
    expect(within(mine).getByRole("radio", { name: "Auto" })).toBeDisabled();
    expect(within(mine).getByRole("radio", { name: "Ask" })).toBeEnabled();
    expect(within(mine).getByRole("radio", { name: "Blocked" })).toBeEnabled();
    expect(within(mine).getByRole("radio", { name: "Use workspace" })).toBeEnabled();
    expect(screen.getByText(/An admin locked this tool at Ask: your own policy can only be stricter/)).toBeInTheDocument();
    expect(screen.getByText(/Effective for me:/).parentElement).toHaveTextContent("Effective for me: Ask · locked by an admin");
  });

  it("without a lock a member may loosen their own policy", () => {
    renderRow({ admin: false, tool: tool({ policy: "always" }) });
    const mine = screen.getByRole("radiogroup", { name: "My policy for delete_forecast" });
    expect(within(mine).getByRole("radio", { name: "Auto" })).toBeEnabled();
  });

  it("an admin's block is final: nothing looser than Blocked, even unlocked", () => {
    renderRow({ admin: false, tool: tool({ policy: "blocked", effective_policy: "blocked", policy_source: "tool" }) });
    const mine = screen.getByRole("radiogroup", { name: "My policy for delete_forecast" });
    expect(within(mine).getByRole("radio", { name: "Auto" })).toBeDisabled();
    expect(within(mine).getByRole("radio", { name: "Ask" })).toBeDisabled();
    expect(screen.getByText(/An admin blocked this tool for everyone/)).toBeInTheDocument();
  });

  it("shows the API's policy_locked refusal and reloads the tools to show the lock", async () => {
    const user = userEvent.setup();
    vi.spyOn(api, "setPolicy").mockRejectedValue(new ApiError(403, "policy_locked",
      "the workspace policy for delete_forecast is locked at always; a personal policy can only be as strict or stricter"));
    const props = renderRow({ admin: false, tool: tool({ policy: "always" }) });
    const mine = screen.getByRole("radiogroup", { name: "My policy for delete_forecast" });
    await user.click(within(mine).getByRole("radio", { name: "Auto" }));
    await waitFor(() => expect(within(mine.parentElement!).getByRole("status"))
      .toHaveTextContent("Could not save: the workspace policy for delete_forecast is locked at always"));
    expect(within(mine).getByRole("radio", { name: "Use workspace" })).toBeChecked();
    expect(props.reload).toHaveBeenCalled();
  });

  it.each([
    [{ asks_because: { reason: "not_read_only" } }, "asks because it is not read-only"],
    [{ asks_because: { reason: "new_tool" }, policy_source: "new" as const }, "new: asks until someone sets its policy"],
    [{ asks_because: { reason: "changed" }, policy_source: "changed" as const, changed: { fields: ["description", "input_schema"], since: null } },
      "changed since you allowed it: description, input schema"],
    [{ asks_because: { reason: "read_only_changed" }, policy_source: "changed" as const, changed: { fields: [], since: null } },
      "says it is read-only, but changed after it was first seen"],
  ])("says why it asks: %j", (over, text) => {
    renderRow({ tool: tool(over as Partial<Tool>) });
    expect(screen.getByText(/Effective for me:/).parentElement).toHaveTextContent(text);
  });
});
