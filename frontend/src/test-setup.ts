import "@testing-library/jest-dom/vitest";
import { cleanup } from "@testing-library/react";
import { afterEach, beforeEach } from "vitest";
import i18n from "./i18n";

// Component tests read English unless they switch (a German test calls
// i18n.changeLanguage("de")).
beforeEach(async () => { await i18n.changeLanguage("en"); });
afterEach(() => cleanup());
