import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApiError, api } from "../api/client";
import type { Policy, Server, Settings, Tool } from "../api/types";
import { SettingsPage } from "./SettingsPage";

const server = (over: Partial<Server> = {}): Server => ({
  label: "demo", url: "http://127.0.0.1:8290/mcp", description: "Weather", headers: {}, default_policy: null, enabled: true,
  created_at: "2026-11-21T10:00:00Z", updated_at: "2026-11-21T10:00:00Z",
  tools_refreshed_at: new Date(Date.now() - 3 * 60_000).toISOString(), tools_refresh_error: null, tool_count: 3, ...over,
});

const tool = (name: string, over: Partial<Tool> = {}): Tool => ({
  name, title: name.replace("_", " "), description: `Does ${name}`, input_schema: { type: "object" },
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  server_id: "demo", discovered: true, first_seen_at: null, definition_changed_at: null,
  policy: null, effective_policy: "never", policy_source: "global", policy_updated_at: null, policy_updated_by: null, ...over,
});

const destructive = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false };

let settings: Settings;
let tools: Tool[];
let servers: Server[];

beforeEach(() => {
  settings = { default_policy: "never", updated_at: "" };
  servers = [server()];
  tools = [
    tool("delete_forecast", { annotations: destructive }),
    tool("get_forecast", { annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } }),
    tool("reset_forecasts", { annotations: destructive, policy: "blocked", effective_policy: "blocked", policy_source: "tool" }),
  ];
  vi.spyOn(api, "listServers").mockImplementation(async () => servers);
  vi.spyOn(api, "settings").mockImplementation(async () => settings);
  vi.spyOn(api, "listTools").mockImplementation(async () => tools);
});
afterEach(() => vi.restoreAllMocks());

const section = () => screen.findByRole("region", { name: "Server demo" });

describe("SettingsPage", () => {
  it("shows the servers and tools the API has, with badges and what the default resolves to", async () => {
    render(<SettingsPage />);
    const s = await section();
    expect(within(s).getByText("http://127.0.0.1:8290/mcp")).toBeInTheDocument();
    await waitFor(() => expect(s.querySelector(".server-status")).toHaveTextContent("3 tools · refreshed 3 minutes ago"));
    expect(within(s).getByTitle(/2026|20\d\d/)).toHaveTextContent("3 minutes ago");
    const del = await within(s).findByRole("radiogroup", { name: "Policy for delete_forecast" });
    expect(within(del).getByRole("radio", { name: "Use default" })).toBeChecked();
    expect(within(del).getByRole("radio", { name: "Use default" })).toHaveAccessibleDescription("(Auto, global default)");
    const row = del.closest("li")!;
    expect(within(row).getByText("destructive")).toHaveClass("badge", "destructive");
    expect(within(screen.getByRole("radiogroup", { name: "Policy for reset_forecasts" })).getByRole("radio", { name: "Blocked" })).toBeChecked();
    expect(within(screen.getByRole("radiogroup", { name: "Global default" })).getByRole("radio", { name: "Auto" })).toBeChecked();
  });

  it("has an empty state without servers", async () => {
    servers = [];
    render(<SettingsPage />);
    expect(await screen.findByText("No MCP servers yet — add one to give the model tools.")).toBeInTheDocument();
  });

  it("a new server default is saved and the tools are reloaded", async () => {
    const user = userEvent.setup();
    const update = vi.spyOn(api, "updateServer").mockImplementation(async (_l, p) => {
      servers = [server({ default_policy: p.default_policy as Policy })];
      tools = tools.map((t) => (t.policy ? t : { ...t, effective_policy: "always", policy_source: "server" }));
      return servers[0];
    });
    render(<SettingsPage />);
    const s = await section();
    await within(s).findByRole("radiogroup", { name: "Policy for get_forecast" });
    const calls = vi.mocked(api.listTools).mock.calls.length;
    await user.click(within(screen.getByRole("radiogroup", { name: "Default for server demo" })).getByRole("radio", { name: "Ask" }));
    expect(update).toHaveBeenCalledWith("demo", { default_policy: "always" });
    await waitFor(() => expect(vi.mocked(api.listTools).mock.calls.length).toBeGreaterThan(calls));
    const get = screen.getByRole("radiogroup", { name: "Policy for get_forecast" });
    expect(within(get).getByRole("radio", { name: "Use default" })).toHaveAccessibleDescription("(Ask, server default)");
    // Filter by effective policy: the reloaded tools now ask.
    await user.selectOptions(screen.getByLabelText("Show"), "Ask");
    expect(screen.getByRole("radiogroup", { name: "Policy for get_forecast" })).toBeInTheDocument();
    expect(screen.queryByRole("radiogroup", { name: "Policy for reset_forecasts" })).toBeNull();
  });

  it("a failing tool policy save rolls back with the server's message", async () => {
    const user = userEvent.setup();
    vi.spyOn(api, "setPolicy").mockRejectedValue(new ApiError(404, "server_not_found", 'there is no MCP server with the label "demo"'));
    render(<SettingsPage />);
    const g = await screen.findByRole("radiogroup", { name: "Policy for get_forecast" });
    await user.click(within(g).getByRole("radio", { name: "Blocked" }));
    const row = g.closest("li")!;
    expect(await within(row).findByText('Could not save: there is no MCP server with the label "demo"')).toBeInTheDocument();
    expect(within(g).getByRole("radio", { name: "Use default" })).toBeChecked();
  });

  it("Ask for all destructive tools sets Ask on the destructive tools that are not blocked", async () => {
    const user = userEvent.setup();
    const bulk = vi.spyOn(api, "setPolicies").mockImplementation(async (_l, p) =>
      tools.map((t) => (t.name in p ? { ...t, policy: "always", effective_policy: "always", policy_source: "tool" } : t)));
    render(<SettingsPage />);
    const s = await section();
    await within(s).findByRole("radiogroup", { name: "Policy for delete_forecast" });
    await user.click(within(s).getByRole("button", { name: "Ask for all destructive tools" }));
    expect(bulk).toHaveBeenCalledWith("demo", { delete_forecast: "always" });
    expect(await within(s).findByText(/1 destructive tool set to Ask: delete_forecast\. 1 blocked tool left blocked\./)).toBeInTheDocument();
    expect(within(screen.getByRole("radiogroup", { name: "Policy for delete_forecast" })).getByRole("radio", { name: "Ask" })).toBeChecked();
  });

  it("search matches name, title and description", async () => {
    const user = userEvent.setup();
    render(<SettingsPage />);
    await screen.findByRole("radiogroup", { name: "Policy for get_forecast" });
    await user.type(screen.getByLabelText("Search tools"), "Does reset");
    expect(screen.getByRole("radiogroup", { name: "Policy for reset_forecasts" })).toBeInTheDocument();
    expect(screen.queryByRole("radiogroup", { name: "Policy for get_forecast" })).toBeNull();
    await user.clear(screen.getByLabelText("Search tools"));
    await user.type(screen.getByLabelText("Search tools"), "zzz");
    expect(screen.getByText(/No tools of demo match/)).toBeInTheDocument();
  });

  it("focuses the tool the link names", async () => {
    render(<SettingsPage focusServer="demo" focusTool="get_forecast" />);
    const g = await screen.findByRole("radiogroup", { name: "Policy for get_forecast" });
    await waitFor(() => expect(within(g).getByRole("radio", { name: "Use default" })).toHaveFocus());
    expect(g.closest("li")).toHaveClass("is-focused");
  });

  it("deletes a server only after confirming, saying its policies go too", async () => {
    const user = userEvent.setup();
    const del = vi.spyOn(api, "deleteServer").mockResolvedValue(undefined);
    render(<SettingsPage />);
    const s = await section();
    await within(s).findByRole("radiogroup", { name: "Policy for get_forecast" });
    await user.click(within(s).getByRole("button", { name: "Delete" }));
    expect(del).not.toHaveBeenCalled();
    const confirm = within(s).getByRole("group", { name: "Confirm deleting demo" });
    expect(confirm).toHaveTextContent("every policy set for them (1 tool policy)");
    await user.click(within(confirm).getByRole("button", { name: "Delete server" }));
    expect(del).toHaveBeenCalledWith("demo");
    await waitFor(() => expect(screen.queryByRole("region", { name: "Server demo" })).toBeNull());
    expect(screen.getByText("Deleted server demo with its tools and policies.")).toBeInTheDocument();
  });

  it("adds a server and loads the tools its discovery found", async () => {
    const user = userEvent.setup();
    const created = server({ label: "crm", url: "https://mcp.example.com/mcp", headers: { Authorization: "********cdef" }, tool_count: 2 });
    const create = vi.spyOn(api, "createServer").mockImplementation(async () => {
      servers = [...servers, created];
      return created;
    });
    render(<SettingsPage />);
    await section();
    await user.click(screen.getByRole("button", { name: "Add server" }));
    await user.type(screen.getByLabelText("Label"), "crm");
    await user.type(screen.getByLabelText("URL"), "https://mcp.example.com/mcp");
    await user.click(screen.getByRole("button", { name: "+ Add header" }));
    await user.type(screen.getByLabelText("Header name"), "Authorization");
    await user.type(screen.getByLabelText("Header value"), "Bearer sk-live-0123456789abcdef");
    await user.click(screen.getByRole("button", { name: "Add server" }));
    expect(create).toHaveBeenCalledWith({ label: "crm", url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer sk-live-0123456789abcdef" } });
    const s = await screen.findByRole("region", { name: "Server crm" });
    expect(within(s).getByText("********cdef")).toBeInTheDocument();
    expect(api.listTools).toHaveBeenCalledWith("crm");
    expect(screen.getByText("Added crm with 2 tools.")).toBeInTheDocument();
  });
});
