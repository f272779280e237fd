import { act, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Policy, Server, Settings, Tool } from "../api/types";
import { jsonResponse, mockFetch } from "../chat/testutil";
import i18n from "../i18n";
import { renderWithClient } from "../testing";
import { SettingsPage } from "./SettingsPage";
import { apiError, destructive, later, readOnly, server, tool } from "./testdata";

let settings: Settings;
let tools: Tool[];
let servers: Server[];
type Routes = Parameters<typeof mockFetch>[0];

/** A fake API over the variables above; extra routes first. */
function serve(extra: Routes = {}) {
  return mockFetch({
    ...extra,
    "GET /api/mcp/servers": () => jsonResponse(200, { servers }),
    "GET /api/settings": () => jsonResponse(200, settings),
    "GET /api/mcp/servers/demo/tools": () => jsonResponse(200, { tools }),
  });
}

beforeEach(() => {
  settings = { default_policy: "never", default_policy_locked: false, ask_everything: false, updated_at: "" };
  servers = [server()];
  tools = [
    tool("delete_forecast", { annotations: destructive }),
    tool("get_forecast", { annotations: readOnly }),
    tool("reset_forecasts", { annotations: destructive, policy: "blocked", effective_policy: "blocked", policy_source: "tool" }),
  ];
});
afterEach(() => vi.unstubAllGlobals());

const section = () => screen.findByRole("region", { name: "Server demo" });
const group = (name: string) => screen.getByRole("radiogroup", { name });
const radio = (g: HTMLElement, name: string) => within(g).getByRole("radio", { name });

describe("SettingsPage", () => {
  it("shows the servers and tools the API has, with badges and what the default resolves to", async () => {
    serve();
    renderWithClient(<SettingsPage />);
    const s = await section();
    expect(within(s).getByText("http://127.0.0.1:8290/mcp")).toBeInTheDocument();
    await waitFor(() => expect(s.querySelector(".server-status")).toHaveTextContent("3 tools · refreshed 3 minutes ago"));
    expect(within(s).getByTitle(/2026|20\d\d/)).toHaveTextContent("3 minutes ago");
    const del = await within(s).findByRole("radiogroup", { name: "Policy for delete_forecast" });
    expect(radio(del, "Use default")).toBeChecked();
    expect(radio(del, "Use default")).toHaveAccessibleDescription("(Auto, global default)");
    expect(within(del.closest("li")!).getByText("destructive")).toHaveClass("badge", "destructive");
    expect(radio(group("Policy for reset_forecasts"), "Blocked")).toBeChecked();
    expect(radio(group("Global default"), "Auto")).toBeChecked();
  });

  it("says when a server's approval requests expire on their own limit", async () => {
    servers = [server({ approval_ttl_seconds: 300 })];
    serve();
    renderWithClient(<SettingsPage />);
    expect(await within(await section()).findByText("Approval requests expire after 5 minutes.")).toBeInTheDocument();
  });

  it("has an empty state without servers", async () => {
    servers = [];
    serve();
    renderWithClient(<SettingsPage />);
    expect(await screen.findByText("No MCP servers yet — add one to give the model tools.")).toBeInTheDocument();
  });

  it("a new server default shows at once, is saved, and the tools are read again", async () => {
    const user = userEvent.setup();
    const patch = later();
    const { calls } = serve({ "PATCH /api/mcp/servers/demo": () => patch.response });
    renderWithClient(<SettingsPage />);
    await screen.findByRole("radiogroup", { name: "Policy for get_forecast" });
    const toolReads = () => calls.filter((c) => c.path === "/api/mcp/servers/demo/tools").length;
    const before = toolReads();
    await user.click(radio(group("Default for server demo"), "Ask"));
    expect(radio(group("Default for server demo"), "Ask")).toBeChecked();
    expect(calls.find((c) => c.method === "PATCH")?.body).toEqual({ default_policy: "always" });

    servers = [server({ default_policy: "always" })];
    tools = tools.map((t) => (t.policy ? t : { ...t, effective_policy: "always", policy_source: "server" }));
    await act(async () => patch.answer(200, servers[0]));
    await waitFor(() => expect(toolReads()).toBeGreaterThan(before));
    await waitFor(() => expect(radio(group("Policy for get_forecast"), "Use default")).toHaveAccessibleDescription("(Ask, server default)"));
    // Filter by effective policy: the tools read again now ask.
    await user.selectOptions(screen.getByLabelText("Show"), "Ask");
    expect(group("Policy for get_forecast")).toBeInTheDocument();
    expect(screen.queryByRole("radiogroup", { name: "Policy for reset_forecasts" })).toBeNull();
  });

  it("a failing tool policy save rolls back with the server's message", async () => {
    const user = userEvent.setup();
    serve({
      "PUT /api/mcp/servers/demo/tools/get_forecast/approval-policy?layer=workspace": () =>
        jsonResponse(404, apiError("server_not_found", 'there is no MCP server with the label "demo"')),
    });
    renderWithClient(<SettingsPage />);
    const g = await screen.findByRole("radiogroup", { name: "Policy for get_forecast" });
    await user.click(radio(g, "Blocked"));
    expect(await within(g.closest("li")!).findByText('Could not save: there is no MCP server with the label "demo"')).toBeInTheDocument();
    expect(radio(g, "Use default")).toBeChecked();
  });

  it("an admin turns on ask for everything: saved, and the page says every tool asks", async () => {
    const user = userEvent.setup();
    const sent: unknown[] = [];
    serve({ "PUT /api/settings": ({ body }) => {
      sent.push(body);
      settings = { ...settings, ...(body as Partial<Settings>) };
      return jsonResponse(200, settings);
    } });
    renderWithClient(<SettingsPage />);
    const box = await screen.findByRole("checkbox", { name: "Ask for everything" });
    expect(box).not.toBeChecked();
    await user.click(box);
    await waitFor(() => expect(sent).toEqual([{ ask_everything: true }]));
    expect(await screen.findByText(/every tool asks before it runs/)).toBeInTheDocument();
  });

  it("a new global default shows at once and rolls back when refused", async () => {
    const user = userEvent.setup();
    const put = later();
    serve({ "PUT /api/settings": () => put.response });
    renderWithClient(<SettingsPage />);
    await screen.findByRole("radiogroup", { name: "Policy for get_forecast" });
    await user.click(radio(group("Global default"), "Blocked"));
    expect(radio(group("Global default"), "Blocked")).toBeChecked();
    expect(radio(group("Global default"), "Auto")).toBeDisabled();
    await act(async () => put.answer(403, apiError("forbidden", "only admins change the settings")));
    await waitFor(() => expect(radio(group("Global default"), "Auto")).toBeChecked());
    expect(within(group("Global default").parentElement!).getByRole("status")).toHaveTextContent("Could not save: only admins change the settings");
  });

  it("Ask for all destructive tools sets Ask on the destructive tools that are not blocked", async () => {
    const user = userEvent.setup();
    const { calls } = serve({
      "PUT /api/mcp/servers/demo/tools/approval-policies": ({ body }) => {
        const p = (body as { policies: Record<string, Policy> }).policies;
        tools = tools.map((t) => (t.name in p ? { ...t, policy: "always", effective_policy: "always", policy_source: "tool" } : t));
        return jsonResponse(200, { tools });
      },
    });
    renderWithClient(<SettingsPage />);
    const s = await section();
    await within(s).findByRole("radiogroup", { name: "Policy for delete_forecast" });
    await user.click(within(s).getByRole("button", { name: "Ask for all destructive tools" }));
    expect(calls.find((c) => c.method === "PUT")?.body).toEqual({ policies: { delete_forecast: "always" } });
    expect(await within(s).findByText(/1 destructive tool set to Ask: delete_forecast\. 1 blocked tool left blocked\./)).toBeInTheDocument();
    expect(radio(group("Policy for delete_forecast"), "Ask")).toBeChecked();
  });

  it("search matches name, title and description", async () => {
    const user = userEvent.setup();
    serve();
    renderWithClient(<SettingsPage />);
    await screen.findByRole("radiogroup", { name: "Policy for get_forecast" });
    await user.type(screen.getByLabelText("Search tools"), "Does reset");
    expect(group("Policy for reset_forecasts")).toBeInTheDocument();
    expect(screen.queryByRole("radiogroup", { name: "Policy for get_forecast" })).toBeNull();
    expect(screen.getByText("1 of 3 tools match")).toBeInTheDocument();
    await user.clear(screen.getByLabelText("Search tools"));
    await user.type(screen.getByLabelText("Search tools"), "zzz");
    expect(screen.getByText(/No tools of demo match/)).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Clear search and filter" }));
    expect(group("Policy for get_forecast")).toBeInTheDocument();
  });

  it("focuses the tool the link names", async () => {
    serve();
    renderWithClient(<SettingsPage focusServer="demo" focusTool="get_forecast" />);
    const g = await screen.findByRole("radiogroup", { name: "Policy for get_forecast" });
    await waitFor(() => expect(radio(g, "Use default")).toHaveFocus());
    expect(g.closest("li")).toHaveClass("is-focused");
  });

  it("says when the tool the link names is not there", async () => {
    serve();
    renderWithClient(<SettingsPage focusServer="demo" focusTool="gone_tool" />);
    expect(await screen.findByText(/lists no tool named/)).toHaveTextContent("demo lists no tool named gone_tool.");
  });

  it("deletes a server only after confirming, saying its policies go too", async () => {
    const user = userEvent.setup();
    const { calls } = serve({ "DELETE /api/mcp/servers/demo": () => new Response(null, { status: 204 }) });
    renderWithClient(<SettingsPage />);
    const s = await section();
    await within(s).findByRole("radiogroup", { name: "Policy for get_forecast" });
    await user.click(within(s).getByRole("button", { name: "Delete" }));
    expect(calls.some((c) => c.method === "DELETE")).toBe(false);
    const confirm = within(s).getByRole("group", { name: "Confirm deleting demo" });
    expect(within(confirm).getByRole("button", { name: "Cancel" })).toHaveFocus();
    expect(confirm).toHaveTextContent("every policy set for them (1 tool policy)");
    servers = [];
    await user.click(within(confirm).getByRole("button", { name: "Delete server" }));
    await waitFor(() => expect(screen.queryByRole("region", { name: "Server demo" })).toBeNull());
    expect(calls.some((c) => c.method === "DELETE" && c.path === "/api/mcp/servers/demo")).toBe(true);
    expect(screen.getByText("Deleted server demo with its tools and policies.")).toBeInTheDocument();
  });

  it("switches a server off at once and back when refused", async () => {
    const user = userEvent.setup();
    const patch = later();
    serve({ "PATCH /api/mcp/servers/demo": () => patch.response });
    renderWithClient(<SettingsPage />);
    const s = await section();
    const sw = within(s).getByRole("switch", { name: "Enabled" });
    await user.click(sw);
    expect(sw).not.toBeChecked();
    expect(sw).toBeDisabled();
    expect(within(s).getByText("disabled")).toBeInTheDocument();
    await act(async () => patch.answer(503, apiError("database_unavailable", "try again shortly")));
    await waitFor(() => expect(sw).toBeChecked());
    expect(s.querySelector(".server-status")).toHaveTextContent("Could not disable demo: try again shortly");
  });

  it("adds a server and loads the tools its discovery found", { timeout: 20_000 }, async () => {
    const user = userEvent.setup({ delay: null });
    const created = server({ label: "crm", url: "https://mcp.example.com/mcp", headers: { Authorization: "********cdef" }, tool_count: 2 });
    const { calls } = serve({
      "POST /api/mcp/servers": () => {
        servers = [...servers, created];
        return jsonResponse(201, created);
      },
      "GET /api/mcp/servers/crm/tools": () => jsonResponse(200, { tools: [tool("find", { server_label: "crm" }), tool("update", { server_label: "crm" })] }),
    });
    renderWithClient(<SettingsPage />);
    await section();
    await user.click(screen.getByRole("button", { name: "Add server" }));
    await user.type(screen.getByLabelText("Label"), "crm");
    await user.type(screen.getByLabelText("URL"), "https://mcp.example.com/mcp");
    await user.click(screen.getByRole("button", { name: "+ Add header" }));
    await user.type(screen.getByLabelText("Header name"), "Authorization");
    await user.type(screen.getByLabelText("Header value"), "Bearer sk-live-0123456789abcdef");
    await user.click(screen.getByRole("button", { name: "Add server" }));
    expect(calls.find((c) => c.method === "POST")?.body)
      .toEqual({ label: "crm", url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer sk-live-0123456789abcdef" } });
    const s = await screen.findByRole("region", { name: "Server crm" });
    expect(within(s).getByText("********cdef")).toBeInTheDocument();
    expect(await within(s).findByRole("radiogroup", { name: "Policy for find" })).toBeInTheDocument();
    expect(screen.getByText("Added crm with 2 tools.")).toBeInTheDocument();
    await waitFor(() => expect(within(s).getByRole("heading", { name: "crm" })).toHaveFocus());
  });

  it("reads German", async () => {
    await act(() => i18n.changeLanguage("de"));
    serve();
    renderWithClient(<SettingsPage />);
    expect(await screen.findByRole("heading", { name: "Tools & Richtlinien" })).toBeInTheDocument();
    const g = await screen.findByRole("radiogroup", { name: "Richtlinie für get_forecast" });
    expect(radio(g, "Standard verwenden")).toBeChecked();
    expect(radio(g, "Standard verwenden")).toHaveAccessibleDescription("(Automatisch, globaler Standard)");
    expect(radio(g, "Nachfragen")).toBeInTheDocument();
    expect(radio(group("Richtlinie für reset_forecasts"), "Blockiert")).toBeChecked();
    expect(screen.getAllByText("destruktiv")[0]).toHaveClass("badge", "destructive");
  });
});
