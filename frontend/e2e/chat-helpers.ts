// Helpers of the chat's browser tests: a slow model (the standalone
// Responses emulator, bin/emulator, with a behaviour for every request), so
// a tool call takes long enough to watch it run and to stop it.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { expect, test } from "./fixtures";
import { binDir } from "./toolgate";

/** Starts bin/emulator with this behaviour (docs/emulator.md); resolves with its /v1/ URL and a stop function. */
export function startEmulator(behavior: string): Promise<{ url: string; stop: () => Promise<void> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(binDir, "emulator"), ["-addr", "127.0.0.1:0", "-behavior", behavior], { stdio: ["ignore", "pipe", "pipe"] });
    let log = "";
    const stop = () => new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      child.once("exit", () => done());
      child.kill("SIGTERM");
    });
    const onData = (b: Buffer) => {
      log += b.toString();
      const m = /base_url=(http:\/\/\S+\/v1\/)/.exec(log);
      if (m) resolve({ url: m[1], stop });
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`the emulator exited with ${code}:\n${log}`)));
  });
}

/**
 * The test fixtures with a slow model: every response of the emulator waits
 * `first-event-delay` before its first byte, so between an approval and the
 * tool's result there are seconds to see it run, or to press Stop.
 */
export const slowTest = test.extend<{ slowModel: string }>({
  slowModel: async ({ browserName: _ }, provide) => {
    const emu = await startEmulator("first-event-delay=4s; event-delay=20ms");
    try { await provide(emu.url); } finally { await emu.stop(); }
  },
  toolgateEnv: async ({ slowModel }, provide) => provide({ OPENAI_BASE_URL: slowModel }),
});

export { expect };
