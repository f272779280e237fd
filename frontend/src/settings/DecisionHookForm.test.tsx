import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { jsonResponse, mockFetch } from "../chat/testutil";
import { renderWithClient } from "../testing";
import { DecisionHookForm } from "./DecisionHookForm";

afterEach(() => vi.unstubAllGlobals());

const saved = {
  scope: "server", server_id: "weather", url: "https://hooks.example.com/toolgate", timeout_ms: 2000, enabled: true,
  updated_at: "2026-11-26T05:00:00Z", updated_by: "admin@example.com",
};

async function open(user: ReturnType<typeof userEvent.setup>, name: RegExp) {
  await user.click(screen.getByText(name));
}

describe("DecisionHookForm", () => {
  it("creates a server's hook, shows the secret once, and reports what Send test answered", async () => {
    const user = userEvent.setup();
    const { calls } = mockFetch({
      "GET /api/mcp/servers/weather/decision-hook": () =>
        jsonResponse(404, { error: { code: "decision_hook_not_set", message: "the server \"weather\" has no decision hook; PUT one first" } }),
      "PUT /api/mcp/servers/weather/decision-hook": () => jsonResponse(200, { ...saved, secret: "tghook_abc123" }),
      "POST /api/mcp/servers/weather/decision-hook/test": () =>
        jsonResponse(200, { decision: "deny", reason: "not on Fridays", status: 200, duration_ms: 42 }),
    });
    renderWithClient(<DecisionHookForm label="weather" />);
    expect(calls).toHaveLength(0); // read only when opened
    await open(user, /^Decision hook/);
    await waitFor(() => expect(screen.getByText(/not set/)).toBeInTheDocument());
    const form = screen.getByRole("form", { name: "Decision hook" });
    expect(within(form).queryByRole("button", { name: "Send test" })).toBeNull();

    await user.type(within(form).getByLabelText("Endpoint URL"), "https://hooks.example.com/toolgate");
    const timeout = within(form).getByLabelText(/Timeout/);
    await user.clear(timeout);
    await user.type(timeout, "2000");
    await user.click(within(form).getByRole("button", { name: "Save hook" }));
    await waitFor(() => expect(screen.getByText("tghook_abc123")).toBeInTheDocument());
    expect(calls.find((c) => c.method === "PUT")?.body).toEqual({ url: "https://hooks.example.com/toolgate", timeout_ms: 2000, enabled: true });
    expect(screen.getByText(/on: https:\/\/hooks.example.com\/toolgate/)).toBeInTheDocument();

    await user.click(screen.getByRole("button", { name: "Send test" }));
    await waitFor(() => expect(screen.getByText(/The hook answered deny \(HTTP 200, 42 ms\)/)).toBeInTheDocument());
    expect(screen.getByText(/Reason: not on Fridays/)).toBeInTheDocument();
    // A saved hook's secret is not cached: GET never returns it.
    expect(calls.filter((c) => c.method === "GET")).toHaveLength(1);
  });

  it("shows the workspace hook's failing test as ask and a 400's sentence when saving fails", async () => {
    const user = userEvent.setup();
    mockFetch({
      "GET /api/decision-hook": () => jsonResponse(200, { ...saved, scope: "workspace", server_id: null }),
      "POST /api/decision-hook/test": () =>
        jsonResponse(200, { decision: "ask", status: 0, error: "the hook did not answer within 2s", duration_ms: 2001 }),
      "PUT /api/decision-hook": () => jsonResponse(400, { error: { code: "url_not_allowed",
        message: "the hook's url must use https: plain http is only allowed to hosts on your own network", fields: { url: "use https" } } }),
    });
    renderWithClient(<DecisionHookForm />);
    await open(user, /^Workspace decision hook/);
    const form = await screen.findByRole("form", { name: "Workspace decision hook" });
    await waitFor(() => expect(within(form).getByLabelText("Endpoint URL")).toHaveValue("https://hooks.example.com/toolgate"));
    await user.click(within(form).getByRole("button", { name: "Send test" }));
    await waitFor(() => expect(screen.getByText(/This would count as ask: the hook did not answer within 2s/)).toBeInTheDocument());

    const url = within(form).getByLabelText("Endpoint URL");
    await user.clear(url);
    await user.type(url, "http://hooks.example.com/x");
    await user.click(within(form).getByRole("button", { name: "Save hook" }));
    await waitFor(() => expect(screen.getByRole("alert")).toHaveTextContent(/plain http is only allowed/));
    expect(url).toHaveAttribute("aria-invalid", "true");
  });
});
