// A tool's MCP annotations as the badges both the approval card and the
// settings panel show. They come from the MCP server: hints, not guarantees.
// The words are the "settings" namespace's (badge.*): pass the `t` of
// useTranslation("settings") from a component so a language change shows at
// once; without it, the current language is used.
import type { TFunction } from "i18next";
import i18n from "../i18n";
import type { Annotations } from "./types";

export interface Hint { key: "read-only" | "destructive" | "open-world"; label: string; title: string }

const KEYS = [
  ["read-only", "readOnly", (a: Annotations) => a.readOnlyHint === true],
  ["destructive", "destructive", (a: Annotations) => a.destructiveHint === true],
  ["open-world", "openWorld", (a: Annotations) => a.openWorldHint === true],
] as const;

/** The badges a tool's annotations earn, in a fixed order. */
export function annotationBadges(a: Annotations | null | undefined, t: TFunction<"settings"> = i18n.getFixedT(null, "settings")): Hint[] {
  if (!a) return [];
  return KEYS.filter(([, , has]) => has(a)).map(([key, word]) => ({
    key, label: t(`badge.${word}`), title: t(`badge.${word}Title`),
  }));
}
