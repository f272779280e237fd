import type { TFunction } from "i18next";
import { describe, expect, it } from "vitest";
import type { Approval } from "../api/types";
import i18n from "../i18n";
import { asksBecauseText } from "./ApprovalCard";

describe("a tool Toolgate could not check before the request (direct mode)", () => {
  for (const lng of ["en", "de"] as const) {
    it(`says so instead of calling it a tool never seen (${lng})`, async () => {
      await i18n.changeLanguage(lng);
      const t = i18n.getFixedT(lng, "chat") as unknown as TFunction<"chat">;
      const why: Approval["asks_because"] = { policy: "always", source: "unknown", reason: "unverified" };
      const text = asksBecauseText(t, why);
      expect(text).toBe(t("why.unverified"));
      expect(text).not.toBe(t("why.source.unknown"));
      expect(text).toMatch(lng === "en" ? /could not check/ : /nicht .*prüfen/);
    });
  }
});
