// Every string of the web app goes through i18next (react-i18next): English
// and German, the language taken from the browser (navigator.languages) unless
// the person picked one in the user menu (kept in localStorage), English for
// any other language. One JSON file per namespace and language under
// locales/; `npm test` fails when a key exists in one language only
// (i18n.test.ts) and when the code uses a key, named or built, that either
// language lacks (keys.test.ts).
//
// No raw key ever shows: a key German lacks is said in English (fallbackLng);
// one both lack shows as its last part in words ("item.allowed.source.user"
// → "user", missingKeyText) and, in development and tests, warns in the
// console.
import i18n from "i18next";
import LanguageDetector from "i18next-browser-languagedetector";
import { initReactI18next } from "react-i18next";

import enCommon from "./locales/en/common.json";
import deCommon from "./locales/de/common.json";
import enChat from "./locales/en/chat.json";
import deChat from "./locales/de/chat.json";
import enSettings from "./locales/en/settings.json";
import deSettings from "./locales/de/settings.json";
import enAccount from "./locales/en/account.json";
import deAccount from "./locales/de/account.json";

export const languages = [
  { code: "en", name: "English" },
  { code: "de", name: "Deutsch" },
] as const;
export type Language = (typeof languages)[number]["code"];

export const resources = {
  en: { common: enCommon, chat: enChat, settings: enSettings, account: enAccount },
  de: { common: deCommon, chat: deChat, settings: deSettings, account: deAccount },
} as const;

/** What shows for a key no language has: its last part, in words, never the dotted key. */
export function missingKeyText(key: string, defaultValue?: string): string {
  if (defaultValue) return defaultValue;
  const last = key.slice(key.lastIndexOf(":") + 1).split(".").pop() ?? key;
  return last.replace(/_/g, " ");
}

/** Development and tests warn about a missing key; a production build does not ask. */
const warnMissing = import.meta.env.DEV || import.meta.env.MODE === "test";

/** Where the person's explicit choice is kept. */
export const languageStorageKey = "toolgate.language";

void i18n
  .use(LanguageDetector)
  .use(initReactI18next)
  .init({
    resources,
    supportedLngs: languages.map((l) => l.code),
    nonExplicitSupportedLngs: true, // de-DE, de-AT → de
    load: "languageOnly",
    fallbackLng: "en",
    defaultNS: "common",
    ns: ["common", "chat", "settings", "account"],
    interpolation: { escapeValue: false }, // React escapes
    returnNull: false,
    parseMissingKeyHandler: (key, defaultValue) => missingKeyText(key, defaultValue),
    saveMissing: warnMissing, // only to warn: there is no backend to save to
    missingKeyHandler: warnMissing
      ? (lngs, ns, key) => console.warn(`i18n: no translation for ${ns}:${key} (${lngs.join(", ")}); add it to locales/en and locales/de`)
      : false,
    detection: {
      order: ["localStorage", "navigator"],
      lookupLocalStorage: languageStorageKey,
      caches: ["localStorage"],
    },
  });

// The document says which language it is in (screen readers, hyphenation).
const setLang = (lng: string) => { if (typeof document !== "undefined") document.documentElement.lang = lng; };
setLang(i18n.resolvedLanguage ?? "en");
i18n.on("languageChanged", (lng) => setLang(i18n.resolvedLanguage ?? lng));

export default i18n;
