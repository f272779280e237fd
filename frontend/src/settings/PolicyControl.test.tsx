import { act, render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useState } from "react";
import { describe, expect, it, vi } from "vitest";
import { ApiError } from "../api/client";
import type { Policy } from "../api/types";
import i18n from "../i18n";
import { PolicyControl, type Choice } from "./PolicyControl";
import type { SaveStatus } from "./queries";

const idle: SaveStatus = { kind: "idle" };

function renderControl(value: Choice, onChange: (next: Choice) => void = vi.fn(), status: SaveStatus = idle) {
  const view = render(
    <PolicyControl label="Policy for delete_forecast" value={value} onChange={onChange} status={status}
      inherit={{ label: "Use default", detail: "(Ask, server default)" }} />,
  );
  return { group: screen.getByRole("radiogroup", { name: "Policy for delete_forecast" }), ...view };
}

const radio = (group: HTMLElement, name: string) => within(group).getByRole("radio", { name });

describe("PolicyControl", () => {
  it("renders the four options with the current one checked", () => {
    const { group } = renderControl("never");
    const radios = within(group).getAllByRole("radio");
    expect(radios.map((r) => document.getElementById(r.getAttribute("aria-labelledby")!)?.textContent))
      .toEqual(["Auto", "Ask", "Blocked", "Use default"]);
    expect(radio(group, "Auto")).toBeChecked();
    expect(radio(group, "Ask")).not.toBeChecked();
    expect(radio(group, "Blocked")).not.toBeChecked();
    const inherit = radio(group, "Use default");
    expect(inherit).not.toBeChecked();
    // What the default resolves to is shown, and read as the option's description.
    expect(inherit).toHaveAccessibleDescription("(Ask, server default)");
    expect(screen.getByText("(Ask, server default)")).toBeVisible();
    // The group says how the keyboard chooses.
    expect(group).toHaveAccessibleDescription("Arrow keys move between the options; Space or Enter chooses one.");
  });

  it("checks Use default when there is no explicit policy", () => {
    const { group } = renderControl(null);
    expect(radio(group, "Use default")).toBeChecked();
  });

  it("a click chooses: Ask is saved as always; Use default as null", async () => {
    const user = userEvent.setup();
    const onChange = vi.fn();
    const { group } = renderControl("never", onChange);
    await user.click(radio(group, "Ask"));
    expect(onChange).toHaveBeenCalledExactlyOnceWith("always");
    await user.click(radio(group, "Use default"));
    expect(onChange).toHaveBeenLastCalledWith(null);
  });

  it("does not save when the current choice is picked again", async () => {
    const user = userEvent.setup();
    const onChange = vi.fn();
    const { group } = renderControl("always", onChange);
    await user.click(radio(group, "Ask"));
    expect(onChange).not.toHaveBeenCalled();
    expect(screen.getByRole("status")).toHaveTextContent("");
  });

  it("arrow keys move the focus without choosing; Enter chooses the focused option, once", async () => {
    const user = userEvent.setup();
    const onChange = vi.fn();
    const { group } = renderControl(null, onChange);
    radio(group, "Use default").focus();
    // From Use default to Blocked: Auto, Ask, Blocked on the way (wrapping).
    await user.keyboard("{ArrowRight}{ArrowRight}{ArrowRight}");
    expect(radio(group, "Blocked")).toHaveFocus();
    expect(onChange).not.toHaveBeenCalled();
    expect(radio(group, "Use default")).toBeChecked();
    await user.keyboard("{ArrowLeft}{ArrowRight}");
    expect(radio(group, "Blocked")).toHaveFocus();
    await user.keyboard("{Enter}");
    expect(onChange).toHaveBeenCalledExactlyOnceWith("blocked");
  });

  it("Space chooses the focused option; Home and End jump", async () => {
    const user = userEvent.setup();
    const onChange = vi.fn();
    const { group } = renderControl("never", onChange);
    radio(group, "Auto").focus();
    await user.keyboard("{End}");
    expect(radio(group, "Use default")).toHaveFocus();
    await user.keyboard("{Home}{ArrowDown}");
    expect(radio(group, "Ask")).toHaveFocus();
    expect(onChange).not.toHaveBeenCalled();
    await user.keyboard(" ");
    expect(onChange).toHaveBeenCalledExactlyOnceWith("always");
  });

  it("the arrows skip options that cannot be chosen", async () => {
    const user = userEvent.setup();
    render(<PolicyControl label="My policy" value={null} onChange={vi.fn()} status={idle}
      inherit={{ label: "Use workspace" }} unavailable={{ choices: ["never"], why: "locked at Ask" }} />);
    const group = screen.getByRole("radiogroup", { name: "My policy" });
    expect(radio(group, "Auto")).toBeDisabled();
    radio(group, "Use workspace").focus();
    await user.keyboard("{ArrowRight}");
    expect(radio(group, "Ask")).toHaveFocus();
  });

  it("is disabled and busy while saving, says so, then Saved", () => {
    const onChange = vi.fn();
    const { group, rerender } = renderControl("always", onChange, { kind: "saving" });
    for (const r of within(group).getAllByRole("radio")) expect(r).toBeDisabled();
    expect(group).toHaveAttribute("aria-busy", "true");
    expect(screen.getByRole("status")).toHaveTextContent("Saving…");
    rerender(<PolicyControl label="Policy for delete_forecast" value="always" onChange={onChange} status={{ kind: "saved" }}
      inherit={{ label: "Use default" }} />);
    for (const r of within(group).getAllByRole("radio")) expect(r).toBeEnabled();
    expect(screen.getByRole("status")).toHaveTextContent("Saved");
  });

  it("shows the API's sentence when saving failed", () => {
    renderControl("never", vi.fn(), { kind: "error", error: new ApiError(503, "database_unavailable", "the database is not reachable; try again shortly") });
    expect(screen.getByRole("status")).toHaveTextContent("Could not save: the database is not reachable; try again shortly");
  });

  it("shows a new value that arrives from outside (a reload)", () => {
    function Harness() {
      const [v, setV] = useState<Policy | null>("never");
      return (
        <>
          <button onClick={() => setV("blocked")}>reload</button>
          <PolicyControl label="Global default" value={v} onChange={vi.fn()} status={idle} />
        </>
      );
    }
    render(<Harness />);
    const group = screen.getByRole("radiogroup", { name: "Global default" });
    // Without an inherit option there are three choices.
    expect(within(group).getAllByRole("radio")).toHaveLength(3);
    expect(within(group).queryByRole("radio", { name: "Use default" })).toBeNull();
    act(() => screen.getByRole("button", { name: "reload" }).click());
    expect(radio(group, "Blocked")).toBeChecked();
  });

  it("speaks German: Automatisch, Nachfragen, Blockiert", async () => {
    await act(() => i18n.changeLanguage("de"));
    render(<PolicyControl label="Richtlinie" value="always" onChange={vi.fn()} status={{ kind: "saved" }}
      inherit={{ label: "Standard verwenden" }} />);
    const group = screen.getByRole("radiogroup", { name: "Richtlinie" });
    expect(within(group).getAllByRole("radio").map((r) => document.getElementById(r.getAttribute("aria-labelledby")!)?.textContent))
      .toEqual(["Automatisch", "Nachfragen", "Blockiert", "Standard verwenden"]);
    expect(screen.getByRole("status")).toHaveTextContent("Gespeichert");
  });
});
