import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import "../i18n";
import { AllowedByLine, DecidedApproval, NoticeRow } from "./items";
import { approval } from "./testutil";

describe("requests that a decision hook answers", () => {
  it("says which hook approved or denied a request, with its reason, and names no person", () => {
    const { rerender } = render(<DecidedApproval approval={{ ...approval("mcpr_1", "delete_forecast"), state: "approved",
      rules: { checked: 0, decision: "approve", rule: null, by: "hook", hook: { scope: "server", server_label: "demo" } } }} />);
    expect(screen.getByText("approved by hook (server demo)")).toBeVisible();
    rerender(<DecidedApproval approval={{ ...approval("mcpr_1", "delete_forecast"), state: "denied",
      rules: { checked: 0, decision: "deny", rule: null, by: "hook", hook: { scope: "workspace", reason: "Oslo is production" } } }} />);
    expect(screen.getByText("denied by hook (workspace) — Oslo is production")).toBeVisible();
    expect(screen.queryByText(/by you/)).toBeNull();
  });

  it("says a call ran because a hook approved it", () => {
    render(<AllowedByLine server="demo" tool="delete_forecast" allowed={{ kind: "hook", hook: { scope: "server", server_label: "demo" } }} />);
    expect(screen.getByText("approved by hook (server demo)")).toBeVisible();
  });

  it("names a failed hook's notice and keeps its message", () => {
    render(<NoticeRow notice={{ code: "decision_hook_failed", server_label: "demo",
      message: "A decision hook could not decide delete_forecast (server hook: the hook did not answer within 3s), so it counts as ask." }} />);
    expect(screen.getByText("A decision hook could not decide; you are asked instead.")).toBeVisible();
    expect(screen.getByText(/did not answer within 3s/)).toBeVisible();
  });
});
