import { act, render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LoginPage } from "./LoginPage";

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

let login: (init: RequestInit) => Response;
let status = { auth_mode: "local", setup_required: false, oidc: false, sign_in_link: false };
let fetchMock: ReturnType<typeof vi.fn>;

beforeEach(() => {
  status = { auth_mode: "local", setup_required: false, oidc: false, sign_in_link: false };
  fetchMock = vi.fn(async (path: string, init: RequestInit = {}) => {
    if (path === "/api/auth/status") return json(200, status);
    if (path === "/api/auth/login") return login(init);
    return json(404, { error: { code: "not_found", message: "no" } });
  });
  vi.stubGlobal("fetch", fetchMock);
});
afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

async function fillAndSubmit(password = "wrong") {
  const user = userEvent.setup();
  await user.type(screen.getByRole("textbox", { name: "Email" }), "ann@example.com");
  await user.type(screen.getByLabelText("Password"), password);
  await user.click(screen.getByRole("button", { name: "Sign in" }));
}

describe("LoginPage", () => {
  it("shows the API's sentence when the password is wrong, and stays on the page", async () => {
    login = () => json(401, { error: { code: "invalid_credentials", message: "wrong email or password" } });
    const onSignedIn = vi.fn();
    render(<LoginPage onSignedIn={onSignedIn} />);
    await fillAndSubmit();
    expect(await screen.findByRole("alert")).toHaveTextContent("wrong email or password");
    expect(onSignedIn).not.toHaveBeenCalled();
    expect(screen.getByLabelText("Password")).toHaveValue("");
    const [, init] = fetchMock.mock.calls.find(([p]) => p === "/api/auth/login")!;
    expect(JSON.parse(init.body)).toEqual({ email: "ann@example.com", password: "wrong" });
    expect(init.headers).toMatchObject({ "Content-Type": "application/json" });
  });

  it("signs in with the right password", async () => {
    login = () => json(200, { id: "usr_1", email: "ann@example.com", role: "member" });
    const onSignedIn = vi.fn();
    render(<LoginPage onSignedIn={onSignedIn} />);
    await fillAndSubmit("right");
    await waitFor(() => expect(onSignedIn).toHaveBeenCalledWith({ id: "usr_1", email: "ann@example.com", role: "member" }));
  });

  it("after 429 says how long to wait from Retry-After, counts down and blocks the button until then", async () => {
    login = () => json(429, { error: { code: "too_many_attempts", message: "too many failed sign-ins" } }, { "Retry-After": "3" });
    render(<LoginPage onSignedIn={vi.fn()} />);
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
    const { unmount } = render(<LoginPage onSignedIn={vi.fn()} />);
    expect(await screen.findByRole("link", { name: "Sign in with SSO" })).toHaveAttribute("href", "/api/auth/oidc/login");
    unmount();
    status = { auth_mode: "local", setup_required: false, oidc: false, sign_in_link: false };
    render(<LoginPage onSignedIn={vi.fn()} />);
    await act(async () => { await Promise.resolve(); });
    await waitFor(() => expect(fetchMock).toHaveBeenCalledTimes(2));
    expect(screen.queryByRole("link", { name: "Sign in with SSO" })).toBeNull();
  });

  it("points the offline demo at the sign-in link in the terminal, and only then", async () => {
    status = { auth_mode: "local", setup_required: false, oidc: false, sign_in_link: true };
    const { unmount } = render(<LoginPage onSignedIn={vi.fn()} />);
    expect(await screen.findByText(/open the sign-in link Toolgate printed in its terminal/)).toBeInTheDocument();
    unmount();
    status = { auth_mode: "local", setup_required: false, oidc: false, sign_in_link: false };
    render(<LoginPage onSignedIn={vi.fn()} />);
    await waitFor(() => expect(fetchMock).toHaveBeenCalledTimes(2));
    expect(screen.queryByText(/sign-in link Toolgate printed/)).toBeNull();
  });
});
