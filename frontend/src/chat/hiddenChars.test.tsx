// What the card shows is what runs: bidi overrides, zero-width and other
// invisible characters in a tool name, its title and its arguments are
// shown as \uXXXX, and the card says so (escape.ts).
import { render, screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import i18n from "../i18n";
import type { Approval } from "../api/types";
import { ApprovalCard } from "./ApprovalCard";
import { escapeHidden, escapedText, hasHidden, hasHiddenDeep } from "./escape";

function approval(over: Partial<Approval> = {}): Approval {
  return {
    approval_request_id: "mcpr_1", conversation_id: "conv_1", response_id: "resp_1",
    server_label: "demo", upstream_label: "demo", tool_name: "send_alert",
    arguments: { city: "Berlin", message: "storm" }, redacted: [],
    annotations: { title: "Send weather alert", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    asks_because: { policy: "always", source: "tool" }, requested_at: "2026-11-21T09:54:01Z", state: "pending",
    decided_at: null, decided_by: null, decided_by_id: null, reason: null, scope: null, remember: false,
    answered_in: null, expires_at: null, correction: null, corrects: null,
    ...over,
  };
}

const warningEN = /invisible or direction-changing characters/;

describe("escapeHidden", () => {
  it("writes bidi controls, zero-width, format and control characters as \\uXXXX and leaves the rest", () => {
    const cases: [string, string][] = [
      ["get_\u202Etsacerof", "get_\\u202Etsacerof"],
      ["a\u202Ab\u202Bc\u202Cd\u202De", "a\\u202Ab\\u202Bc\\u202Cd\\u202De"],
      ["\u2066x\u2067y\u2068z\u2069", "\\u2066x\\u2067y\\u2068z\\u2069"],
      ["\u200Eleft\u200Fright\u061Carabic", "\\u200Eleft\\u200Fright\\u061Carabic"],
      ["zero\u200Bwidth\u200C\u200D\u2060\uFEFF", "zero\\u200Bwidth\\u200C\\u200D\\u2060\\uFEFF"],
      ["soft\u00ADhyphen, tag \u{E0041}", "soft\\u00ADhyphen, tag \\u{E0041}"],
      ["bell\u0007 esc\u001B c1\u0085 ls\u2028", "bell\\u0007 esc\\u001B c1\\u0085 ls\\u2028"],
      ["filler\u3164", "filler\\u3164"],
      ["Wetter für Köln 天気 🌦️", "Wetter für Köln 天気 🌦️"],
      ["plain", "plain"],
      ["", ""],
    ];
    for (const [input, want] of cases) expect(escapedText(input)).toBe(want);
    expect(escapeHidden("a\u202Eb")).toEqual([
      { text: "a", hidden: false }, { text: "\\u202E", hidden: true }, { text: "b", hidden: false },
    ]);
  });

  it("warns for hidden characters anywhere in the arguments, but not for newline and tab", () => {
    expect(hasHidden("line one\nline two\tcol")).toBe(false);
    expect(hasHidden("Berlin\u200B")).toBe(true);
    expect(hasHiddenDeep({ city: "Berlin", to: ["a@example.com", { note: "ok\n" }] })).toBe(false);
    expect(hasHiddenDeep({ city: "Berlin", to: ["a@example.com", { note: "x\u202Ey" }] })).toBe(true);
    expect(hasHiddenDeep({ ["ci\u200Bty"]: "Berlin" })).toBe(true);
    expect(hasHiddenDeep(42)).toBe(false);
  });
});

describe("ApprovalCard with hidden characters", () => {
  afterEach(async () => { await i18n.changeLanguage("en"); });

  it("shows a tool name with a bidi override escaped, and warns", () => {
    render(<ApprovalCard approval={approval({ tool_name: "get_\u202Etsacerof_eteled" })} busy={false} onDecide={() => {}} />);
    const card = screen.getByRole("article", { name: "Approval request: get_\\u202Etsacerof_eteled on demo" });
    const heading = within(card).getByRole("heading", { level: 2 });
    expect(heading.textContent).toBe("get_\\u202Etsacerof_eteled on demo");
    expect(card.textContent).not.toContain("\u202E");
    expect(within(heading).getByText("\\u202E")).toHaveClass("hidden-char");
    expect(within(card).getByRole("note")).toHaveTextContent(warningEN);
  });

  it("shows argument values and keys with zero-width and bidi characters escaped, and warns", () => {
    render(<ApprovalCard approval={approval({ arguments: { city: "Berlin\u200B", ["to\u202E"]: "evil\u2066.com", message: "two\nlines" } })}
      busy={false} onDecide={() => {}} />);
    const card = screen.getByRole("article");
    const args = within(card).getByRole("region", { name: "Arguments" }).querySelector("pre")!;
    expect(args.textContent).toBe('{\n  "city": "Berlin\\u200B",\n  "to\\u202E": "evil\\u2066.com",\n  "message": "two\\nlines"\n}');
    expect(card.textContent).not.toMatch(/[\u200B\u202E\u2066]/);
    expect(within(card).getByRole("note")).toHaveTextContent(warningEN);
  });

  it("says nothing when the name, title and arguments are plain, newlines included", () => {
    render(<ApprovalCard approval={approval({ arguments: { message: "line one\nline two\ttab" } })} busy={false} onDecide={() => {}} />);
    expect(screen.queryByText(warningEN)).not.toBeInTheDocument();
  });

  it("warns in German too", async () => {
    await i18n.changeLanguage("de");
    const { container } = render(<ApprovalCard approval={approval({ annotations: { title: "Wetter\u200B" } as Approval["annotations"] })}
      busy={false} onDecide={() => {}} />);
    expect(screen.getByRole("note")).toHaveTextContent(/unsichtbare oder die Schreibrichtung ändernde Zeichen/);
    expect(container.querySelector(".approval-tool-title")?.textContent).toBe("Wetter\\u200B");
  });
});
