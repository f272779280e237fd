// "ran without asking (policy: Auto, item.allowed.source.user)": the line
// under a call that ran by policy names where the policy was set, in words,
// for every source the API can send, in English and German.
import { render } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { AllowedBy } from "../api/types";
import i18n from "../i18n";
import { AllowedByLine } from "./items";

const sources: NonNullable<AllowedBy["source"]>[] = ["tool", "server", "global", "user", "locked", "new", "changed", "ask_everything", "conversation", "unknown"];

describe("AllowedByLine for a call that ran by policy", () => {
  for (const lng of ["en", "de"] as const) {
    it(`says where the policy came from in words (${lng})`, async () => {
      await i18n.changeLanguage(lng);
      const raw: string[] = [];
      for (const source of sources) {
        const { container, unmount } = render(<AllowedByLine allowed={{ kind: "policy", policy: "never", source }} server="demo" tool="get_forecast" />);
        const text = container.textContent ?? "";
        if (/item\.allowed|\bsource\.|\b[a-z]+_[a-z_]+\b/.test(text)) raw.push(`${source}: ${text}`);
        unmount();
      }
      expect(raw).toEqual([]);
    });
  }
  it("your own policy", () => {
    const { container } = render(<AllowedByLine allowed={{ kind: "policy", policy: "never", source: "user" }} server="demo" tool="get_forecast" />);
    expect(container).toHaveTextContent("ran without asking (policy: Auto, your own policy)");
  });
});
