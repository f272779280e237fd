import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { App } from "./App";
import type { Me } from "./api/types";
import { jsonResponse as json, mockFetch } from "./chat/testutil";
import i18n from "./i18n";
import { renderWithClient } from "./testing";

const unauth = () => json(401, { error: { code: "unauthenticated", message: "sign in first" } });
const ann: Me = { id: "usr_1", email: "ann@example.com", role: "member" };

let signedIn: boolean;
let who: Me;
let calls: { method: string; path: string }[];

/** The API as a member or admin sees it; every call but the sign-in ones answers 401 once signed out. */
function serve() {
  const guarded = (body: unknown) => () => (signedIn ? json(200, body) : unauth());
  calls = mockFetch({
    "GET /api/auth/status": () => json(200, { auth_mode: "local", setup_required: false, oidc: false, sign_in_link: false }),
    "POST /api/auth/login": () => { signedIn = true; return json(200, who); },
    "POST /api/auth/logout": () => { signedIn = false; return new Response(null, { status: 204 }); },
    "GET /api/auth/me": () => (signedIn ? json(200, who) : unauth()),
    "GET /api/info": guarded({ offline: true, model: "m", tool_layout: "default", base_url: "" }),
    "GET /api/mcp/servers": guarded({ servers: [] }),
    "GET /api/settings": guarded({ default_policy: "ask_unless_read_only", default_policy_locked: false, updated_at: "" }),
    "GET /api/conversations": guarded({ conversations: [] }),
    "GET /api/users": guarded({ users: [{ ...who, disabled: false, created_at: "2026-11-20T10:00:00Z", last_login_at: null }] }),
    "GET /api/audit": guarded({ entries: [], next_cursor: null }),
    "GET /api/tokens": guarded({ tokens: [] }),
  }).calls;
}

beforeEach(() => {
  signedIn = true;
  who = ann;
  serve();
  history.replaceState(null, "", "/tokens"); // a page of the shell's own
});
afterEach(() => {
  vi.unstubAllGlobals();
  history.replaceState(null, "", "/");
});

const count = (method: string, path: string) => calls.filter((c) => c.method === method && c.path === path).length;

describe("App", () => {
  it("shows the login page when not signed in, keeping the path to return to", async () => {
    signedIn = false;
    history.replaceState(null, "", "/settings?server=demo");
    renderWithClient(<App />);
    await screen.findByRole("heading", { name: "Sign in to Toolgate" });
    // The address follows in the effect after the page renders.
    await waitFor(() => expect(location.pathname + location.search).toBe("/login?next=%2Fsettings%3Fserver%3Ddemo"));

    const user = userEvent.setup();
    await user.type(screen.getByRole("textbox", { name: "Email" }), "ann@example.com");
    await user.type(screen.getByLabelText("Password"), "pw");
    await user.click(screen.getByRole("button", { name: "Sign in" }));
    await waitFor(() => expect(screen.getByRole("link", { name: "Tools & policies" })).toHaveAttribute("aria-current", "page"));
    expect(location.pathname + location.search).toBe("/settings?server=demo");
    expect(screen.queryByRole("status", { name: /session ended/ })).toBeNull();
  });

  it("a webhook's link to a card, opened signed out, comes back to that card after signing in", async () => {
    signedIn = false;
    history.replaceState(null, "", "/c/conv_1#approval-mcpr_1");
    renderWithClient(<App />);
    await screen.findByRole("heading", { name: "Sign in to Toolgate" });
    await waitFor(() => expect(location.pathname + location.search).toBe("/login?next=%2Fc%2Fconv_1%23approval-mcpr_1"));
    const user = userEvent.setup();
    await user.type(screen.getByRole("textbox", { name: "Email" }), "ann@example.com");
    await user.type(screen.getByLabelText("Password"), "pw");
    await user.click(screen.getByRole("button", { name: "Sign in" }));
    await waitFor(() => expect(location.pathname + location.hash).toBe("/c/conv_1#approval-mcpr_1"));
  });

  it("a 401 from any later call sends the app to the login page, saying the session ended", async () => {
    renderWithClient(<App />);
    await screen.findByRole("button", { name: "Account: ann@example.com" });
    signedIn = false; // the session expires
    const user = userEvent.setup();
    await user.click(screen.getByRole("link", { name: "Tools & policies" }));
    await screen.findByRole("heading", { name: "Sign in to Toolgate" });
    expect(screen.getByRole("status")).toHaveTextContent("Your session ended");
    await waitFor(() => expect(location.pathname + location.search).toBe("/login?next=%2Fsettings"));
  });

  it("says when Toolgate cannot be reached, and tries again on request", async () => {
    const fail = mockFetch({}).fn;
    fail.mockRejectedValueOnce(new TypeError("Failed to fetch"));
    renderWithClient(<App />);
    expect(await screen.findByRole("alert")).toHaveTextContent("Could not reach Toolgate: Toolgate could not be reached.");
    serve();
    await userEvent.setup().click(screen.getByRole("button", { name: "Try again" }));
    await screen.findByRole("button", { name: "Account: ann@example.com" });
  });

  it("the user menu shows who is signed in; a member gets no Users link; Sign out posts logout and forgets what was read", async () => {
    const { client } = renderWithClient(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByRole("button", { name: "Account: ann@example.com" }));
    expect(screen.getByText("member")).toBeInTheDocument();
    expect(screen.getByRole("link", { name: "API tokens" })).toHaveAttribute("href", "/tokens");
    expect(screen.queryByRole("link", { name: "Users" })).toBeNull();
    await waitFor(() => expect(client.getQueryData(["info"])).toBeDefined());
    await user.click(screen.getByRole("button", { name: "Sign out" }));
    await screen.findByRole("heading", { name: "Sign in to Toolgate" });
    expect(count("POST", "/api/auth/logout")).toBe(1);
    await waitFor(() => expect(location.pathname).toBe("/login"));
    expect(screen.queryByRole("status")).toBeNull(); // signing out is not a session that ended
    expect(client.getQueryData(["info"])).toBeUndefined();
  });

  it("an admin gets the Users link and page; a member opening /users is told it is for admins", async () => {
    who = { ...ann, role: "admin" };
    const { unmount } = renderWithClient(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByRole("button", { name: "Account: ann@example.com" }));
    await user.click(screen.getByRole("link", { name: "Users" }));
    await screen.findByRole("heading", { name: "Users" });
    expect(await screen.findByRole("row", { name: /ann@example.com/ })).toBeInTheDocument();
    unmount();

    who = ann;
    history.replaceState(null, "", "/users");
    renderWithClient(<App />);
    expect(await screen.findByRole("alert")).toHaveTextContent("Only admins manage users.");
    expect(count("GET", "/api/users")).toBe(1); // the admin's visit only
  });

  it("an admin gets the Approvals link and page; a member gets no link, and opening it is told it is for admins", async () => {
    who = { ...ann, role: "admin" };
    const { unmount } = renderWithClient(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByRole("button", { name: "Account: ann@example.com" }));
    await user.click(screen.getByRole("link", { name: "Approvals" }));
    await screen.findByRole("heading", { name: "Approvals" });
    expect(location.pathname).toBe("/approvals/stats");
    const statsCalls = () => calls.filter((c) => c.path.startsWith("/api/approvals/stats")).length;
    await waitFor(() => expect(statsCalls()).toBe(1));
    unmount();

    who = ann;
    const member = renderWithClient(<App />);
    await user.click(await screen.findByRole("button", { name: "Account: ann@example.com" }));
    expect(screen.queryByRole("link", { name: "Approvals" })).toBeNull();
    member.unmount();
    history.replaceState(null, "", "/approvals/stats");
    renderWithClient(<App />);
    expect(await screen.findByRole("alert")).toHaveTextContent("Only admins see the approval statistics.");
    expect(statsCalls()).toBe(1); // the admin's visit only
  });

  // Catches: a nav without the inbox, or without its count.
  it("the nav links to Waiting for me with how many requests wait", async () => {
    const w = { approval_request_id: "mcpr_1", source: { kind: "chat", conversation_id: "conv_1", title: "t" } };
    calls = mockFetch({
      "GET /api/auth/me": () => json(200, who),
      "GET /api/info": () => json(200, { offline: true, model: "m", tool_layout: "default", base_url: "" }),
      "GET /api/tokens": () => json(200, { tokens: [] }),
      "GET /api/approvals?state=pending": () => json(200, { approvals: [w, { ...w, approval_request_id: "mcpr_2" }] }),
    }).calls;
    renderWithClient(<App />);
    const link = await screen.findByRole("link", { name: "Waiting for me (2 requests wait)" });
    expect(link).toHaveAttribute("href", "/inbox");
  });

  it("a member sees servers and defaults read-only", async () => {
    history.replaceState(null, "", "/settings");
    renderWithClient(<App />);
    await screen.findByRole("heading", { name: "Tools & policies" });
    await waitFor(() => expect(count("GET", "/api/settings")).toBe(1));
    expect(screen.queryByRole("button", { name: "Add server" })).toBeNull();
    expect(screen.queryByRole("radiogroup", { name: "Global default" })).toBeNull();
  });

  it("reads /api/info once per page load, for the top bar and the chat alike", async () => {
    history.replaceState(null, "", "/");
    renderWithClient(<App />);
    expect(await screen.findByText("Offline demo (emulated model)")).toBeInTheDocument();
    const user = userEvent.setup();
    await user.click(screen.getByRole("link", { name: "Tools & policies" }));
    await screen.findByRole("heading", { name: "Tools & policies" });
    await user.click(screen.getByRole("link", { name: "Chat" }));
    await waitFor(() => expect(screen.getByRole("link", { name: "Chat" })).toHaveAttribute("aria-current", "page"));
    await new Promise((r) => setTimeout(r, 50)); // the chat page's own reads start
    expect(count("GET", "/api/info")).toBe(1);
  });

  it("switches the language from the user menu, and keeps the choice", async () => {
    renderWithClient(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByRole("button", { name: "Account: ann@example.com" }));
    const menu = screen.getByRole("combobox", { name: "Language" });
    expect(within(menu).getByRole("option", { name: "English" })).toHaveProperty("selected", true);
    await user.selectOptions(menu, "Deutsch");
    expect(await screen.findByRole("link", { name: "Tools & Richtlinien" })).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Konto: ann@example.com" })).toBeInTheDocument();
    expect(screen.getByRole("link", { name: "API-Tokens" })).toBeInTheDocument();
    expect(screen.getByRole("combobox", { name: "Sprache" })).toHaveValue("de");
    expect(screen.getByText("Offline-Demo (emuliertes Modell)")).toBeInTheDocument();
    expect(screen.getByRole("heading", { name: "API-Tokens" })).toBeInTheDocument();
    expect(localStorage.getItem("toolgate.language")).toBe("de");
    expect(document.documentElement.lang).toBe("de");
    expect(i18n.resolvedLanguage).toBe("de");
  });
});
