// Playwright's globalSetup: the run fails at once, with one message saying
// what is missing (Postgres, Chromium, the binaries, the built app), instead
// of every test failing on its own or being skipped.
import { preflight } from "./toolgate";

export default function globalSetup(): void {
  preflight();
}
