import { act, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Server } from "../api/types";
import { jsonResponse, mockFetch } from "../chat/testutil";
import i18n from "../i18n";
import { renderWithClient } from "../testing";
import { SettingsPage } from "./SettingsPage";
import { server, tool } from "./testdata";

const minutesAgo = (n: number) => new Date(Date.now() - n * 60_000).toISOString();

const down = (label: string): Server => server({
  label, url: `http://127.0.0.1:1/${label}`, tools_refresh_error: null,
  health: { status: "unreachable", since: "2026-11-21T14:03:12Z", last_error: "connection refused (is the MCP server running?)",
    checked_at: minutesAgo(1), ok_at: minutesAgo(90) },
});

function serve(servers: Server[]) {
  const routes: Parameters<typeof mockFetch>[0] = {
    "GET /api/mcp/servers": () => jsonResponse(200, { servers }),
    "GET /api/settings": () => jsonResponse(200, { default_policy: "never", default_policy_locked: false, updated_at: "" }),
  };
  for (const s of servers) routes[`GET /api/mcp/servers/${s.label}/tools`] = () => jsonResponse(200, { tools: [tool("get_forecast", { server_label: s.label })] });
  mockFetch(routes);
}

afterEach(() => vi.unstubAllGlobals());

describe("server health in the settings", () => {
  it("says a server that cannot be reached is unreachable, since when, why, and that chats leave it out", async () => {
    serve([server(), down("demo-2"), server({ label: "fresh", health: { status: "unknown", since: null, last_error: null, checked_at: null, ok_at: null } })]);
    renderWithClient(<SettingsPage />);

    const broken = await screen.findByRole("region", { name: "Server demo-2" });
    const badge = within(broken).getByText("Unreachable");
    expect(badge).toHaveClass("badge", "health-down");
    expect(within(broken).queryByText("Reachable")).not.toBeInTheDocument();
    const detail = broken.querySelector(".server-health-detail")!;
    expect(detail).toHaveTextContent("Unreachable since");
    expect(detail).toHaveTextContent("connection refused (is the MCP server running?)");
    expect(detail).toHaveTextContent("Chats leave this server out until it answers again");
    expect(detail).toHaveTextContent("Last checked 1 minute ago");
    expect(within(detail as HTMLElement).getByText(/2026/).closest("time")).toHaveAttribute("dateTime", "2026-11-21T14:03:12Z");

    const ok = screen.getByRole("region", { name: "Server demo" });
    expect(within(ok).getByText("Reachable")).toHaveClass("health-ok");
    expect(ok.querySelector(".server-health-detail")).toBeNull();

    const fresh = screen.getByRole("region", { name: "Server fresh" });
    expect(within(fresh).getByText("Not checked yet")).toHaveClass("health-unknown");
    expect(within(fresh).queryByText("Reachable")).not.toBeInTheDocument();
  });

  it("speaks German", async () => {
    await act(async () => { await i18n.changeLanguage("de"); });
    serve([down("demo-2")]);
    renderWithClient(<SettingsPage />);
    const broken = await screen.findByRole("region", { name: "Server demo-2" });
    expect(within(broken).getByText("Nicht erreichbar")).toHaveClass("health-down");
    await waitFor(() => expect(broken.querySelector(".server-health-detail")).toHaveTextContent("Chats lassen diesen Server weg"));
  });
});
