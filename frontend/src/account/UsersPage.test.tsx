import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { User } from "../api/types";
import { SessionContext } from "../auth/session";
import { jsonResponse as json, mockFetch } from "../chat/testutil";
import { renderWithClient } from "../testing";
import { UsersPage } from "./UsersPage";

const user = (id: string, email: string, role: User["role"] = "member"): User =>
  ({ id, email, role, disabled: false, created_at: "2026-11-20T10:00:00Z", last_login_at: null });

let users: User[];
let api: ReturnType<typeof mockFetch>;

/** A small user store behind the API routes; the last admin cannot become a member. */
beforeEach(() => {
  users = [user("usr_root", "root@example.com", "admin"), user("usr_bob", "bob@example.com")];
  api = mockFetch({
    "GET /api/users": () => json(200, { users }),
    "POST /api/users": ({ body }) => {
      const b = body as { email: string; role: User["role"] };
      if (users.some((u) => u.email === b.email)) return json(409, { error: { code: "email_taken", message: "that email is taken" } });
      const u = user("usr_new", b.email, b.role);
      users = [...users, u];
      return json(201, u);
    },
    "PATCH /api/users/usr_bob": ({ body }) => {
      users = users.map((u) => (u.id === "usr_bob" ? { ...u, ...(body as Partial<User>) } : u));
      return json(200, users.find((u) => u.id === "usr_bob"));
    },
    "PATCH /api/users/usr_root": () => json(409, { error: { code: "last_admin", message: "the last admin cannot be demoted" } }),
  });
});
afterEach(() => vi.unstubAllGlobals());

const render = () => renderWithClient(
  <SessionContext.Provider value={{ id: "usr_root", email: "root@example.com", role: "admin" }}><UsersPage /></SessionContext.Provider>,
);

describe("UsersPage", () => {
  it("lists the people, marks who you are, and adds a person", async () => {
    const u = userEvent.setup();
    render();
    expect(await screen.findByRole("row", { name: /root@example.com \(you\)/ })).toBeInTheDocument();
    await u.type(screen.getByRole("textbox", { name: "Email" }), "carol@example.com");
    await u.type(screen.getByLabelText("Password"), "pw-carol");
    await u.selectOptions(screen.getByRole("combobox", { name: "Role" }), "Admin");
    await u.click(screen.getByRole("button", { name: "Add person" }));
    expect(await screen.findByRole("row", { name: /carol@example.com/ })).toBeInTheDocument();
    expect(screen.getByRole("status")).toHaveTextContent("Added carol@example.com as Admin.");
    expect(screen.getByRole("combobox", { name: "Role of carol@example.com" })).toHaveValue("admin");
    expect(screen.getByRole("textbox", { name: "Email" })).toHaveValue("");
    expect(api.calls.find((c) => c.method === "POST")?.body).toEqual({ email: "carol@example.com", password: "pw-carol", role: "admin" });
  });

  it("says why an account could not be added", async () => {
    const u = userEvent.setup();
    render();
    await screen.findByRole("row", { name: /bob@example.com/ });
    await u.type(screen.getByRole("textbox", { name: "Email" }), "bob@example.com");
    await u.type(screen.getByLabelText("Password"), "pw");
    await u.click(screen.getByRole("button", { name: "Add person" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("Could not add bob@example.com: that email is taken");
  });

  it("changes a role and disables an account; the list shows what the API kept", async () => {
    const u = userEvent.setup();
    render();
    await u.selectOptions(await screen.findByRole("combobox", { name: "Role of bob@example.com" }), "Admin");
    await waitFor(() => expect(users.find((x) => x.id === "usr_bob")?.role).toBe("admin"));
    expect(screen.getByRole("combobox", { name: "Role of bob@example.com" })).toHaveValue("admin");

    await u.click(screen.getByRole("button", { name: "Disable bob@example.com" }));
    expect(await screen.findByRole("button", { name: "Enable bob@example.com" })).toBeInTheDocument();
    expect(screen.getByRole("row", { name: /bob@example.com/ })).toHaveTextContent("disabled");
    expect(api.calls.filter((c) => c.method === "PATCH").map((c) => c.body)).toEqual([{ role: "admin" }, { disabled: true }]);
  });

  it("shows the API's refusal on the row, and the role stays", async () => {
    const u = userEvent.setup();
    render();
    await u.selectOptions(await screen.findByRole("combobox", { name: "Role of root@example.com" }), "Member");
    expect(await screen.findByRole("alert")).toHaveTextContent("the last admin cannot be demoted");
    expect(screen.getByRole("combobox", { name: "Role of root@example.com" })).toHaveValue("admin");
  });
});
