import { act, render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useState } from "react";
import { describe, expect, it, vi } from "vitest";
import type { Policy } from "../api/types";
import { ApiError } from "../api/client";
import { PolicyControl, type Choice } from "./PolicyControl";

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
}

function renderControl(value: Choice, onChange: (next: Choice) => Promise<unknown>) {
  render(
    <PolicyControl
      label="Policy for delete_forecast"
      value={value}
      onChange={onChange}
      inherit={{ label: "Use default", detail: "(Ask, server default)" }}
    />,
  );
  return screen.getByRole("radiogroup", { name: "Policy for delete_forecast" });
}

describe("PolicyControl", () => {
  it("renders the four options with the current one checked", () => {
    const group = renderControl("never", vi.fn());
    const radios = within(group).getAllByRole("radio");
    expect(radios.map((r) => r.getAttribute("aria-labelledby") && (document.getElementById(r.getAttribute("aria-labelledby")!)?.textContent)))
      .toEqual(["Auto", "Ask", "Blocked", "Use default"]);
    expect(within(group).getByRole("radio", { name: "Auto" })).toBeChecked();
    expect(within(group).getByRole("radio", { name: "Ask" })).not.toBeChecked();
    expect(within(group).getByRole("radio", { name: "Blocked" })).not.toBeChecked();
    const inherit = within(group).getByRole("radio", { name: "Use default" });
    expect(inherit).not.toBeChecked();
    // What the default resolves to is shown, and read as the option's description.
    expect(inherit).toHaveAccessibleDescription("(Ask, server default)");
    expect(screen.getByText("(Ask, server default)")).toBeVisible();
  });

  it("checks Use default when there is no explicit policy", () => {
    const group = renderControl(null, vi.fn());
    expect(within(group).getByRole("radio", { name: "Use default" })).toBeChecked();
  });

  it("saves Ask as always and shows Saving… then Saved", async () => {
    const user = userEvent.setup();
    const save = deferred();
    const onChange = vi.fn(() => save.promise);
    const group = renderControl("never", onChange);

    await user.click(within(group).getByRole("radio", { name: "Ask" }));
    expect(onChange).toHaveBeenCalledTimes(1);
    expect(onChange).toHaveBeenCalledWith("always");
    // Optimistic: Ask is shown at once.
    expect(within(group).getByRole("radio", { name: "Ask" })).toBeChecked();
    expect(screen.getByRole("status")).toHaveTextContent("Saving…");

    await act(async () => save.resolve());
    expect(screen.getByRole("status")).toHaveTextContent("Saved");
    expect(within(group).getByRole("radio", { name: "Ask" })).toBeChecked();
    expect(within(group).getByRole("radio", { name: "Auto" })).not.toBeChecked();
  });

  it("rolls back to the previous choice and shows the server's message when saving fails", async () => {
    const user = userEvent.setup();
    const save = deferred();
    const group = renderControl("never", () => save.promise);

    await user.click(within(group).getByRole("radio", { name: "Blocked" }));
    expect(within(group).getByRole("radio", { name: "Blocked" })).toBeChecked();

    await act(async () => save.reject(new ApiError(503, "database_unavailable", "the database is not reachable; try again shortly")));
    expect(within(group).getByRole("radio", { name: "Auto" })).toBeChecked();
    expect(within(group).getByRole("radio", { name: "Blocked" })).not.toBeChecked();
    expect(screen.getByRole("status")).toHaveTextContent("Could not save: the database is not reachable; try again shortly");
    expect(screen.getByRole("status")).not.toHaveTextContent("Saved");

    // The control works again after a failure.
    expect(within(group).getByRole("radio", { name: "Ask" })).toBeEnabled();
  });

  it("Use default asks for the explicit policy to be removed (null)", async () => {
    const user = userEvent.setup();
    const onChange = vi.fn(() => Promise.resolve());
    const group = renderControl("blocked", onChange);

    await user.click(within(group).getByRole("radio", { name: "Use default" }));
    expect(onChange).toHaveBeenCalledWith(null);
    expect(await screen.findByText("Saved")).toBeInTheDocument();
    expect(within(group).getByRole("radio", { name: "Use default" })).toBeChecked();
  });

  it("is disabled while saving and enabled again afterwards", async () => {
    const user = userEvent.setup();
    const save = deferred();
    const onChange = vi.fn(() => save.promise);
    const group = renderControl("never", onChange);

    await user.click(within(group).getByRole("radio", { name: "Ask" }));
    for (const r of within(group).getAllByRole("radio")) expect(r).toBeDisabled();
    expect(group).toHaveAttribute("aria-busy", "true");

    // A click while saving does nothing.
    await user.click(within(group).getByRole("radio", { name: "Blocked" }));
    expect(onChange).toHaveBeenCalledTimes(1);
    expect(within(group).getByRole("radio", { name: "Ask" })).toBeChecked();

    await act(async () => save.resolve());
    for (const r of within(group).getAllByRole("radio")) expect(r).toBeEnabled();
  });

  it("does not save when the current choice is picked again", async () => {
    const user = userEvent.setup();
    const onChange = vi.fn(() => Promise.resolve());
    const group = renderControl("always", onChange);
    await user.click(within(group).getByRole("radio", { name: "Ask" }));
    expect(onChange).not.toHaveBeenCalled();
    expect(screen.getByRole("status")).toHaveTextContent("");
  });

  it("moves with arrow keys like native radios, saving each step", async () => {
    const user = userEvent.setup();
    const onChange = vi.fn(() => Promise.resolve());
    const group = renderControl("never", onChange);
    within(group).getByRole("radio", { name: "Auto" }).focus();
    await user.keyboard("{ArrowRight}");
    expect(onChange).toHaveBeenLastCalledWith("always");
    expect(await screen.findByText("Saved")).toBeInTheDocument();
    expect(within(group).getByRole("radio", { name: "Ask" })).toBeChecked();
  });

  it("shows a new saved value that arrives from outside (a reload)", () => {
    function Harness() {
      const [v, setV] = useState<Policy | null>("never");
      return (
        <>
          <button onClick={() => setV("blocked")}>reload</button>
          <PolicyControl label="Global default" value={v} onChange={() => Promise.resolve()} />
        </>
      );
    }
    render(<Harness />);
    const group = screen.getByRole("radiogroup", { name: "Global default" });
    // Without an inherit option there are three choices.
    expect(within(group).getAllByRole("radio")).toHaveLength(3);
    expect(within(group).queryByRole("radio", { name: "Use default" })).toBeNull();
    act(() => screen.getByRole("button", { name: "reload" }).click());
    expect(within(group).getByRole("radio", { name: "Blocked" })).toBeChecked();
  });
});
