// playwright.config.ts for the load test bench.ts alone (npm run bench).
import { defineConfig } from "@playwright/test";
import suite from "../playwright.config";

export default defineConfig({
  ...suite,
  testDir: ".",
  testMatch: "bench.ts",
  globalSetup: "./preflight.ts",
  outputDir: "../test-results/e2e/playwright-bench",
  timeout: 30 * 60_000,
});
