// The Chromium the browser tests drive: the system's (CHROMIUM_PATH, default
// /usr/bin/chromium; Playwright's own download is not used), with the flags
// that work on a machine without network. Shared by playwright.config.ts and
// the specs that need one more flag (crosssite.spec.ts).
import type { LaunchOptions } from "@playwright/test";

export const chromiumPath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";

const args = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
  "--no-first-run", "--disable-component-update", "--disable-sync",
];

/** Launch options for the system's Chromium, plus extraArgs. */
export function launchOptions(extraArgs: string[] = []): LaunchOptions {
  return { executablePath: chromiumPath, args: [...args, ...extraArgs] };
}
