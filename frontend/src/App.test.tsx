import { render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { App } from "./App";

const json = (status: number, body: unknown) =>
  new Response(status === 204 ? null : JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
const unauth = () => json(401, { error: { code: "unauthenticated", message: "sign in first" } });

let signedIn: boolean;
let calls: string[];

beforeEach(() => {
  signedIn = true;
  calls = [];
  vi.stubGlobal("fetch", vi.fn(async (path: string, init: RequestInit = {}) => {
    calls.push(`${init.method ?? "GET"} ${path}`);
    if (path === "/api/auth/status") return json(200, { auth_mode: "local", setup_required: false, oidc: false, sign_in_link: false });
    if (path === "/api/auth/login") {
      signedIn = true;
      return json(200, { id: "usr_1", email: "ann@example.com", role: "member" });
    }
    if (path === "/api/auth/logout") { signedIn = false; return json(204, null); }
    if (!signedIn) return unauth();
    if (path === "/api/auth/me") return json(200, { id: "usr_1", email: "ann@example.com", role: "member" });
    if (path === "/api/info") return json(200, { offline: true, model: "m", tool_layout: "default", base_url: "" });
    if (path === "/api/mcp/servers") return json(200, { servers: [] });
    if (path === "/api/settings") return json(200, { default_policy: "ask_unless_read_only", default_policy_locked: false, updated_at: "" });
    if (path === "/api/conversations") return json(200, { conversations: [] });
    return json(404, { error: { code: "not_found", message: "no such thing" } });
  }));
});
afterEach(() => {
  vi.unstubAllGlobals();
  history.replaceState(null, "", "/");
});

describe("App", () => {
  it("shows the login page when not signed in, keeping the path to return to", async () => {
    signedIn = false;
    history.replaceState(null, "", "/settings?server=demo");
    render(<App />);
    await screen.findByRole("heading", { name: "Sign in to Toolgate" });
    // The address follows in the effect after the page renders.
    await waitFor(() => expect(location.pathname + location.search).toBe("/login?next=%2Fsettings%3Fserver%3Ddemo"));

    const user = userEvent.setup();
    await user.type(screen.getByRole("textbox", { name: "Email" }), "ann@example.com");
    await user.type(screen.getByLabelText("Password"), "pw");
    await user.click(screen.getByRole("button", { name: "Sign in" }));
    await screen.findByRole("heading", { name: "Tools & policies" });
    expect(location.pathname + location.search).toBe("/settings?server=demo");
  });

  it("a 401 from any later call sends the app to the login page, saying the session ended", async () => {
    history.replaceState(null, "", "/");
    render(<App />);
    await screen.findByRole("button", { name: "Account: ann@example.com" });
    signedIn = false; // the session expires
    const user = userEvent.setup();
    await user.click(screen.getByRole("link", { name: "Tools & policies" }));
    await screen.findByRole("heading", { name: "Sign in to Toolgate" });
    expect(screen.getByRole("status")).toHaveTextContent("Your session ended");
    await waitFor(() => expect(location.pathname + location.search).toBe("/login?next=%2Fsettings"));
  });

  it("the user menu shows who is signed in; a member gets no Users link; Sign out posts logout", async () => {
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByRole("button", { name: "Account: ann@example.com" }));
    expect(screen.getByText("member")).toBeInTheDocument();
    expect(screen.getByRole("link", { name: "API tokens" })).toHaveAttribute("href", "/tokens");
    expect(screen.queryByRole("link", { name: "Users" })).toBeNull();
    await user.click(screen.getByRole("button", { name: "Sign out" }));
    await screen.findByRole("heading", { name: "Sign in to Toolgate" });
    expect(calls).toContain("POST /api/auth/logout");
    await waitFor(() => expect(location.pathname).toBe("/login"));
  });

  it("a member sees servers and defaults read-only", async () => {
    history.replaceState(null, "", "/settings");
    render(<App />);
    await screen.findByRole("heading", { name: "Tools & policies" });
    await screen.findByText("An admin registers MCP servers; their tools then show here.");
    expect(screen.queryByRole("button", { name: "Add server" })).toBeNull();
    expect(screen.queryByRole("radiogroup", { name: "Global default" })).toBeNull();
    expect(screen.getByText("Ask unless read-only", { selector: "strong" })).toBeInTheDocument();
  });
});
