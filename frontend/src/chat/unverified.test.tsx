import { describe, expect, it } from "vitest";
import i18n from "../i18n";
import { asksBecauseText } from "./ApprovalCard";

describe("a tool Toolgate could not check before the request (direct mode)", () => {
  for (const lng of ["en", "de"] as const) {
    it(`says so instead of calling it a tool never seen (${lng})`, async () => {
      await i18n.changeLanguage(lng);
      const t = i18n.getFixedT(lng, "chat");
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const text = asksBecauseText(t as any, { source: "unknown", reason: "unverified" } as any);
      expect(text).toBe(t("why.unverified"));
      expect(text).not.toBe(t("why.source.unknown"));
      expect(text).toMatch(lng === "en" ? /could not check/ : /nicht .*prüfen/);
    });
  }
});
