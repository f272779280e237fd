import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { AllowedByLine } from "./items";

describe("AllowedByLine", () => {
  it("says a call ran by a grant: for this conversation, or a timed one with its end", () => {
    const { unmount } = render(<AllowedByLine allowed={{ kind: "conversation", grant_id: "grant_1" }} server="demo" tool="t" />);
    expect(screen.getByText("allowed for this conversation")).toBeInTheDocument();
    unmount();
    render(<AllowedByLine allowed={{ kind: "grant", grant_id: "grant_2", expires_at: "2026-11-22T11:00:00Z" }} server="demo" tool="t" />);
    expect(screen.getByText(/^allowed by your grant until /)).toBeInTheDocument();
  });
});
