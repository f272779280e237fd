import { useQuery } from "@tanstack/react-query";
import { act, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Server, Tool } from "../api/types";
import { jsonResponse, mockFetch } from "../chat/testutil";
import { renderWithClient } from "../testing";
import { toolsQuery } from "./queries";
import { apiError, destructive, later, server as makeServer, tool as makeTool } from "./testdata";
import { ToolRow } from "./ToolRow";

const server: Server = makeServer({ tool_count: 1 });
const tool = (over: Partial<Tool> = {}) => makeTool("delete_forecast", {
  description: "Deletes a forecast", annotations: destructive,
  effective_policy: "always", asks_because: { reason: "not_read_only" }, ...over,
});

const POLICY = "/api/mcp/servers/demo/tools/delete_forecast/approval-policy";
const TOOLS = "GET /api/mcp/servers/demo/tools";
const NOW = Date.parse("2026-11-21T12:00:00Z");
let tools: Tool[];

/** The row as the page shows it: the tool read from the query cache. */
function Row({ admin = true }: { admin?: boolean }) {
  const { data } = useQuery(toolsQuery("demo"));
  const t = data?.find((x) => x.name === "delete_forecast");
  return t ? <ul><ToolRow tool={t} server={server} globalDefault="ask_unless_read_only" admin={admin} now={NOW} highlight={false} /></ul> : null;
}

async function renderRow(admin = true) {
  renderWithClient(<Row admin={admin} />);
  await screen.findByRole("radiogroup", { name: "My policy for delete_forecast" });
}

const workspace = () => screen.getByRole("radiogroup", { name: "Policy for delete_forecast" });
const mine = () => screen.getByRole("radiogroup", { name: "My policy for delete_forecast" });
const statusOf = (group: HTMLElement) => within(group.parentElement!).getByRole("status");
const radio = (group: HTMLElement, name: string) => within(group).getByRole("radio", { name });

/** The server keeps what it answered: a later GET returns it. */
const saved = (t: Tool) => {
  tools = [t];
  return jsonResponse(200, t);
};

beforeEach(() => { tools = [tool()]; });
afterEach(() => vi.unstubAllGlobals());

describe("ToolRow", () => {
  it("an admin sets the workspace policy (layer workspace) and mine (layer user) separately", async () => {
    const user = userEvent.setup();
    const { calls } = mockFetch({
      [TOOLS]: () => jsonResponse(200, { tools }),
      [`PUT ${POLICY}?layer=workspace`]: () => saved(tool({ policy: "always", policy_source: "tool" })),
      [`PUT ${POLICY}?layer=user`]: () => saved(tool({ policy: "always", user_policy: "blocked", effective_policy: "blocked", policy_source: "user" })),
    });
    await renderRow();
    // The default resolves per tool: not read-only, so Ask.
    expect(radio(workspace(), "Use default")).toHaveAccessibleDescription("(Ask, global default)");
    await user.click(radio(workspace(), "Ask"));
    await waitFor(() => expect(statusOf(workspace())).toHaveTextContent("Saved"));
    expect(calls.filter((c) => c.method === "PUT")).toEqual([
      { method: "PUT", path: `${POLICY}?layer=workspace`, body: { policy: "always", locked: false } },
    ]);

    await user.click(radio(mine(), "Blocked"));
    await waitFor(() => expect(statusOf(mine())).toHaveTextContent("Saved"));
    expect(calls.filter((c) => c.method === "PUT").at(-1)).toEqual({ method: "PUT", path: `${POLICY}?layer=user`, body: { policy: "blocked" } });
    await waitFor(() => expect(screen.getByText(/Effective for me:/).parentElement).toHaveTextContent("Effective for me: Blocked · your policy"));
  });

  it("shows the new choice at once, disabled while saving, before the server answers", async () => {
    const user = userEvent.setup();
    const put = later();
    mockFetch({ [TOOLS]: () => jsonResponse(200, { tools }), [`PUT ${POLICY}?layer=workspace`]: () => put.response });
    await renderRow();
    await user.click(radio(workspace(), "Blocked"));
    // Optimistic: Blocked is checked while the PUT is still open.
    expect(radio(workspace(), "Blocked")).toBeChecked();
    expect(statusOf(workspace())).toHaveTextContent("Saving…");
    for (const r of within(workspace()).getAllByRole("radio")) expect(r).toBeDisabled();
    expect(workspace()).toHaveAttribute("aria-busy", "true");

    tools = [tool({ policy: "blocked", effective_policy: "blocked", policy_source: "tool" })];
    await act(async () => put.answer(200, tools[0]));
    await waitFor(() => expect(statusOf(workspace())).toHaveTextContent("Saved"));
    expect(radio(workspace(), "Blocked")).toBeChecked();
    for (const r of within(workspace()).getAllByRole("radio")) expect(r).toBeEnabled();
  });

  it("a failed save rolls back to the previous choice and shows the API's sentence", async () => {
    const user = userEvent.setup();
    const put = later();
    // Only the first read answers: the rollback is the mutation's, not a read of the tools after it.
    let reads = 0;
    mockFetch({
      [TOOLS]: () => (reads++ === 0 ? jsonResponse(200, { tools }) : new Promise<Response>(() => {})),
      [`PUT ${POLICY}?layer=workspace`]: () => put.response,
    });
    await renderRow();
    await user.click(radio(workspace(), "Blocked"));
    expect(radio(workspace(), "Blocked")).toBeChecked();

    await act(async () => put.answer(503, apiError("database_unavailable", "the database is not reachable; try again shortly")));
    await waitFor(() => expect(statusOf(workspace())).toHaveTextContent("Could not save: the database is not reachable; try again shortly"));
    expect(radio(workspace(), "Use default")).toBeChecked();
    expect(radio(workspace(), "Blocked")).not.toBeChecked();
    expect(statusOf(workspace())).not.toHaveTextContent("Saved");
    // The control works again after a failure.
    expect(radio(workspace(), "Ask")).toBeEnabled();
  });

  it("arrow keys save nothing on the way: one PUT, with the option chosen", async () => {
    const user = userEvent.setup();
    const { calls } = mockFetch({
      [TOOLS]: () => jsonResponse(200, { tools }),
      [`PUT ${POLICY}?layer=workspace`]: ({ body }) =>
        saved(tool({ policy: (body as { policy: Tool["policy"] }).policy, policy_source: "tool" })),
    });
    await renderRow();
    radio(workspace(), "Use default").focus();
    await user.keyboard("{ArrowRight}{ArrowRight}{ArrowRight}");
    expect(radio(workspace(), "Use default")).toBeChecked();
    await user.keyboard("{Enter}");
    await waitFor(() => expect(statusOf(workspace())).toHaveTextContent("Saved"));
    expect(calls.filter((c) => c.method === "PUT" || c.method === "DELETE")).toEqual([
      { method: "PUT", path: `${POLICY}?layer=workspace`, body: { policy: "blocked", locked: false } },
    ]);
    expect(radio(workspace(), "Blocked")).toBeChecked();
  });

  it("Use default removes the workspace policy (DELETE)", async () => {
    const user = userEvent.setup();
    tools = [tool({ policy: "blocked", effective_policy: "blocked", policy_source: "tool" })];
    const { calls } = mockFetch({ [TOOLS]: () => jsonResponse(200, { tools }), [`DELETE ${POLICY}?layer=workspace`]: () => saved(tool()) });
    await renderRow();
    await user.click(radio(workspace(), "Use default"));
    await waitFor(() => expect(statusOf(workspace())).toHaveTextContent("Saved"));
    expect(calls.some((c) => c.method === "DELETE" && c.path === `${POLICY}?layer=workspace`)).toBe(true);
    expect(radio(workspace(), "Use default")).toBeChecked();
  });

  it("an admin locks a tool's own policy, and cannot lock Use default", async () => {
    const user = userEvent.setup();
    tools = [tool({ policy: "always", policy_source: "tool" })];
    const { calls } = mockFetch({
      [TOOLS]: () => jsonResponse(200, { tools }),
      [`PUT ${POLICY}?layer=workspace`]: () => saved(tool({ policy: "always", policy_locked: true, locked: true })),
    });
    await renderRow();
    const lock = screen.getByRole("checkbox", { name: "Lock the policy for delete_forecast" });
    await user.click(lock);
    expect(lock).toBeChecked();
    await waitFor(() => expect(lock).toBeEnabled());
    expect(calls.find((c) => c.method === "PUT")?.body).toEqual({ policy: "always", locked: true });
    expect(screen.getByText("locked", { selector: ".locked-badge" })).toBeInTheDocument();
  });

  it("the lock is disabled while the tool has no workspace policy of its own", async () => {
    mockFetch({ [TOOLS]: () => jsonResponse(200, { tools }) });
    await renderRow();
    expect(screen.getByRole("checkbox", { name: "Lock the policy for delete_forecast" })).toBeDisabled();
  });

  it("a member sees the workspace policy read-only; a lock disables only the looser personal options and says why", async () => {
    tools = [tool({ policy: "always", policy_locked: true, locked: true, policy_source: "locked", asks_because: { reason: "policy" } })];
    mockFetch({ [TOOLS]: () => jsonResponse(200, { tools }) });
    await renderRow(false);
    expect(screen.queryByRole("radiogroup", { name: "Policy for delete_forecast" })).toBeNull();
    expect(screen.queryByRole("checkbox", { name: /Lock/ })).toBeNull();
    expect(screen.getByLabelText("Workspace policy for delete_forecast")).toHaveTextContent("Ask (set for this tool) locked");
    expect(radio(mine(), "Auto")).toBeDisabled();
    expect(radio(mine(), "Ask")).toBeEnabled();
    expect(radio(mine(), "Blocked")).toBeEnabled();
    expect(radio(mine(), "Use workspace")).toBeEnabled();
    expect(screen.getByText(/An admin locked this tool at Ask: your own policy can only be stricter/)).toBeInTheDocument();
    expect(screen.getByText(/Effective for me:/).parentElement).toHaveTextContent("Effective for me: Ask · locked by an admin");
  });

  it("without a lock a member may loosen their own policy; an admin's block is final", async () => {
    tools = [tool({ policy: "always" })];
    mockFetch({ [TOOLS]: () => jsonResponse(200, { tools }) });
    await renderRow(false);
    expect(radio(mine(), "Auto")).toBeEnabled();
  });

  it("an admin's block is final: nothing looser than Blocked, even unlocked", async () => {
    tools = [tool({ policy: "blocked", effective_policy: "blocked", policy_source: "tool" })];
    mockFetch({ [TOOLS]: () => jsonResponse(200, { tools }) });
    await renderRow(false);
    expect(radio(mine(), "Auto")).toBeDisabled();
    expect(radio(mine(), "Ask")).toBeDisabled();
    expect(screen.getByText(/An admin blocked this tool for everyone/)).toBeInTheDocument();
  });

  it("shows the API's policy_locked refusal, rolls back, and reads the tools again to show the lock", async () => {
    const user = userEvent.setup();
    tools = [tool({ policy: "always" })];
    const { calls } = mockFetch({
      [TOOLS]: () => jsonResponse(200, { tools }),
      [`PUT ${POLICY}?layer=user`]: () => {
        tools = [tool({ policy: "always", policy_locked: true, locked: true, policy_source: "locked" })];
        return jsonResponse(403, apiError("policy_locked",
          "the workspace policy for delete_forecast is locked at always; a personal policy can only be as strict or stricter"));
      },
    });
    await renderRow(false);
    await user.click(radio(mine(), "Auto"));
    await waitFor(() => expect(statusOf(mine())).toHaveTextContent("Could not save: the workspace policy for delete_forecast is locked at always"));
    expect(radio(mine(), "Use workspace")).toBeChecked();
    await waitFor(() => expect(radio(mine(), "Auto")).toBeDisabled());
    expect(calls.filter((c) => c.method === "GET")).toHaveLength(2);
  });

  it.each([
    [{ asks_because: { reason: "not_read_only" } }, "asks because it is not read-only"],
    [{ asks_because: { reason: "new_tool" }, policy_source: "new" as const }, "new: asks until someone sets its policy"],
    [{ asks_because: { reason: "changed" }, policy_source: "changed" as const, changed: { fields: ["description", "input_schema"], since: null } },
      "changed since you allowed it: description, input schema"],
    [{ asks_because: { reason: "read_only_changed" }, policy_source: "changed" as const, changed: { fields: [], since: null } },
      "says it is read-only, but changed after it was first seen"],
  ])("says why it asks: %j", async (over, text) => {
    tools = [tool(over as Partial<Tool>)];
    mockFetch({ [TOOLS]: () => jsonResponse(200, { tools }) });
    await renderRow();
    expect(screen.getByText(/Effective for me:/).parentElement).toHaveTextContent(text);
  });
});
