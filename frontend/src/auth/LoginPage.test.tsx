import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { AuthStatus } from "../api/types";
import { jsonResponse as json, mockFetch } from "../chat/testutil";
import i18n from "../i18n";
import { renderWithClient } from "../testing";
import { LoginPage } from "./LoginPage";
import { SetupPage } from "./SetupPage";

let login: () => Response;
let status: AuthStatus;
let api: ReturnType<typeof mockFetch>;

beforeEach(() => {
  status = { auth_mode: "local", setup_required: false, oidc: false, sign_in_link: false };
  api = mockFetch({
    "GET /api/auth/status": () => json(200, status),
    "POST /api/auth/login": () => login(),
    "POST /api/auth/setup": () => json(201, { id: "usr_1", email: "root@example.com", role: "admin" }),
  });
});
afterEach(() => vi.unstubAllGlobals());

async function fillAndSubmit(password = "wrong") {
  const user = userEvent.setup();
  await user.type(screen.getByRole("textbox", { name: "Email" }), "ann@example.com");
  await user.type(screen.getByLabelText("Password"), password);
  await user.click(screen.getByRole("button", { name: "Sign in" }));
}

const statusRead = () => waitFor(() => expect(api.calls.some((c) => c.path === "/api/auth/status")).toBe(true));

describe("LoginPage", () => {
  it("shows the API's sentence when the password is wrong, and stays on the page", async () => {
    login = () => json(401, { error: { code: "invalid_credentials", message: "wrong email or password" } });
    const onSignedIn = vi.fn();
    renderWithClient(<LoginPage onSignedIn={onSignedIn} />);
    await fillAndSubmit();
    expect(await screen.findByRole("alert")).toHaveTextContent("wrong email or password");
    expect(onSignedIn).not.toHaveBeenCalled();
    expect(screen.getByLabelText("Password")).toHaveValue("");
    expect(api.calls.find((c) => c.path === "/api/auth/login")).toMatchObject({ method: "POST", body: { email: "ann@example.com", password: "wrong" } });
  });

  it("signs in with the right password, and the session holds the person", async () => {
    login = () => json(200, { id: "usr_1", email: "ann@example.com", role: "member" });
    const onSignedIn = vi.fn();
    const { client } = renderWithClient(<LoginPage onSignedIn={onSignedIn} />);
    await fillAndSubmit("right");
    await waitFor(() => expect(onSignedIn).toHaveBeenCalledWith({ id: "usr_1", email: "ann@example.com", role: "member" }));
    expect(client.getQueryData(["auth", "me"])).toEqual({ id: "usr_1", email: "ann@example.com", role: "member" });
  });

  it("after 429 says how long to wait from Retry-After, counts down and blocks the button until then", async () => {
    login = () => new Response(JSON.stringify({ error: { code: "too_many_attempts", message: "too many failed sign-ins" } }),
      { status: 429, headers: { "Content-Type": "application/json", "Retry-After": "3" } });
    renderWithClient(<LoginPage onSignedIn={vi.fn()} />);
    await fillAndSubmit();
    expect(await screen.findByRole("alert")).toHaveTextContent("Too many attempts, try again in 3 s");
    const user = userEvent.setup();
    await user.type(screen.getByLabelText("Password"), "again");
    expect(screen.getByRole("button", { name: "Sign in" })).toBeDisabled();
    await waitFor(() => expect(screen.getByRole("alert")).toHaveTextContent("try again in 2 s"), { timeout: 2000 });
    await waitFor(() => expect(screen.queryByRole("alert")).toBeNull(), { timeout: 4000 });
    expect(screen.getByRole("button", { name: "Sign in" })).toBeEnabled();
  });

  it("offers Sign in with SSO only when the server uses OIDC", async () => {
    status = { auth_mode: "oidc", setup_required: false, oidc: true, sign_in_link: false };
    const { unmount } = renderWithClient(<LoginPage onSignedIn={vi.fn()} />);
    expect(await screen.findByRole("link", { name: "Sign in with SSO" })).toHaveAttribute("href", "/api/auth/oidc/login");
    unmount();
    status = { auth_mode: "local", setup_required: false, oidc: false, sign_in_link: false };
    api.calls.length = 0;
    renderWithClient(<LoginPage onSignedIn={vi.fn()} />);
    await statusRead();
    await new Promise((r) => setTimeout(r, 20));
    expect(screen.queryByRole("link", { name: "Sign in with SSO" })).toBeNull();
  });

  it("points the offline demo at the sign-in link in the terminal, and only then", async () => {
    status = { auth_mode: "local", setup_required: false, oidc: false, sign_in_link: true };
    const { unmount } = renderWithClient(<LoginPage onSignedIn={vi.fn()} />);
    expect(await screen.findByText(/open the sign-in link Toolgate printed in its terminal/)).toBeInTheDocument();
    expect(screen.getByText("toolgate: sign in: http://…", { selector: "code" })).toBeInTheDocument();
    unmount();
    status = { auth_mode: "local", setup_required: false, oidc: false, sign_in_link: false };
    api.calls.length = 0;
    renderWithClient(<LoginPage onSignedIn={vi.fn()} />);
    await statusRead();
    await new Promise((r) => setTimeout(r, 20));
    expect(screen.queryByText(/sign-in link Toolgate printed/)).toBeNull();
  });

  it("speaks German when the language is German, the API's own sentence as it came", async () => {
    await i18n.changeLanguage("de");
    login = () => json(401, { error: { code: "invalid_credentials", message: "wrong email or password" } });
    renderWithClient(<LoginPage onSignedIn={vi.fn()} />);
    expect(screen.getByRole("heading", { name: "Bei Toolgate anmelden" })).toBeInTheDocument();
    const user = userEvent.setup();
    await user.type(screen.getByRole("textbox", { name: "E-Mail" }), "ann@example.com");
    await user.type(screen.getByLabelText("Passwort"), "pw");
    await user.click(screen.getByRole("button", { name: "Anmelden" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("wrong email or password");
  });
});

describe("SetupPage", () => {
  it("asks for the same password twice, then creates the first admin and signs them in", async () => {
    const onSignedIn = vi.fn();
    const { client } = renderWithClient(<SetupPage token="tok" onSignedIn={onSignedIn} />);
    const user = userEvent.setup();
    await user.type(screen.getByRole("textbox", { name: "Email" }), "root@example.com");
    await user.type(screen.getByLabelText("Password"), "secret-1");
    await user.type(screen.getByLabelText("Password again"), "secret-2");
    expect(screen.getByText("The passwords differ.")).toBeInTheDocument();
    const submit = screen.getByRole("button", { name: "Create admin and sign in" });
    expect(submit).toBeDisabled();
    await user.clear(screen.getByLabelText("Password again"));
    await user.type(screen.getByLabelText("Password again"), "secret-1");
    await user.click(submit);
    await waitFor(() => expect(onSignedIn).toHaveBeenCalled());
    expect(api.calls.find((c) => c.path === "/api/auth/setup")?.body).toEqual({ token: "tok", email: "root@example.com", password: "secret-1" });
    expect(client.getQueryData(["auth", "me"])).toMatchObject({ email: "root@example.com", role: "admin" });
  });

  it("says what to open when the link has no token", () => {
    renderWithClient(<SetupPage onSignedIn={vi.fn()} />);
    expect(screen.getByRole("alert")).toHaveTextContent("This setup link has no token");
    expect(screen.queryByRole("button")).toBeNull();
  });
});
