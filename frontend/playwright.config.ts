// Browser tests (e2e/*.spec.ts): the web app in the system's Chromium against
// the real toolgate binary, offline, on a fresh Postgres database per test
// (e2e/fixtures.ts). One worker: each test starts its own binary and
// database, and CI machines have two cores. Screenshots: test-results/e2e/.
// How to run them: e2e/README.md.
import { defineConfig } from "@playwright/test";
import { launchOptions } from "./e2e/chromium";

export default defineConfig({
  testDir: "e2e",
  testMatch: "*.spec.ts",
  globalSetup: "./e2e/preflight.ts",
  // Playwright empties outputDir at the start of a run: its own artifacts
  // (traces, attachments) go below the screenshots, which e2e/fixtures.ts
  // replaces per test, so one file's run keeps the other files' pictures.
  outputDir: "test-results/e2e/playwright",
  workers: 1,
  fullyParallel: false,
  retries: 0,
  forbidOnly: !!process.env.CI,
  // Per test: starting the binary and a migrated database takes ~1 s, the
  // slowest scenario (automatic upstream retries, then Retry) ~20 s.
  timeout: 90_000,
  globalTimeout: 20 * 60_000,
  expect: { timeout: 10_000 },
  reporter: "list",
  use: {
    browserName: "chromium",
    headless: true,
    launchOptions: launchOptions(),
    viewport: { width: 1280, height: 900 },
    // English unless a test asks for another language (the German tests set
    // locale "de-DE"), whatever the machine's LANG says.
    locale: "en-US",
    actionTimeout: 10_000,
    navigationTimeout: 15_000,
    // The end-state screenshot of every test (also of failures) is
    // e2e/fixtures.ts's; a trace is on request: npx playwright test --trace on.
    screenshot: "off",
    trace: "off",
  },
});
