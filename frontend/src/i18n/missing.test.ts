// What the page shows for a key a language lacks: never the raw key.
import { afterEach, describe, expect, it, vi } from "vitest";
import i18n, { missingKeyText } from "./index";

describe("a missing translation", () => {
  afterEach(() => {
    i18n.removeResourceBundle("en", "zz");
    vi.restoreAllMocks();
  });

  it("a key German lacks is said in English", () => {
    i18n.addResourceBundle("en", "zz", { only: { here: "Only in English" } });
    expect(i18n.getFixedT("de", "zz")("only.here")).toBe("Only in English");
  });

  it("a key no language has shows its last part in words, with a warning in development and tests", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const said = i18n.getFixedT("de", "chat")("item.allowed.source.some_new_source");
    expect(said).toBe("some new source");
    expect(said).not.toContain("item.allowed");
    expect(warn).toHaveBeenCalledWith(expect.stringContaining("chat:item.allowed.source.some_new_source"));
    expect(missingKeyText("chat:turnError.stopped")).toBe("stopped");
    expect(missingKeyText("x.y", "Given default")).toBe("Given default");
  });
});
