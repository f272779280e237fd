// Starts the real toolgate binary offline (its built-in OpenAI Responses
// emulator and demo MCP server) on a fresh Postgres database, and the
// standalone demo MCP server. Used by fixtures.ts; no Playwright here.
import { execFile, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromiumPath } from "./chromium";

const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, "../..");
/** Where the screenshots go. */
export const shotsDir = resolve(here, "../test-results/e2e");
/** The web app the binary serves: frontend/dist (just built), or the copy embedded in bin/toolgate when TOOLGATE_E2E_WEB=embedded. */
const distDir = resolve(here, "../dist");
const embedded = process.env.TOOLGATE_E2E_WEB === "embedded";
/** The binaries under test: bin/ of the repo, or TOOLGATE_BIN_DIR (e.g. a build of another checkout). */
export const binDir = process.env.TOOLGATE_BIN_DIR || join(repo, "bin");

/** Throws one clear message listing everything the tests need and do not have. */
export function preflight(): void {
  const problems: string[] = [];
  if (!process.env.TEST_DATABASE_URL) {
    problems.push("TEST_DATABASE_URL is not set: the browser tests need Postgres, e.g. "
      + "TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable' (make test sets it when 127.0.0.1:5432 answers).");
  }
  if (!existsSync(chromiumPath)) {
    problems.push(`Chromium is not at ${chromiumPath}: install it with "apt-get install -y chromium" (or set CHROMIUM_PATH).`);
  }
  for (const bin of ["toolgate", "demo-mcp"]) {
    if (!existsSync(join(binDir, bin))) {
      problems.push(`${join(binDir, bin)} is missing: build it with "./scripts/build.sh" (or "make build") in the repo.`);
    }
  }
  if (!embedded && !existsSync(join(distDir, "index.html"))) {
    problems.push('frontend/dist is not built: run "npm run build" in frontend/.');
  }
  if (problems.length) throw new Error("the end-to-end tests cannot run:\n  " + problems.join("\n  "));
  mkdirSync(shotsDir, { recursive: true });
}

type Started = {
  match: RegExpExecArray;
  log: () => string;
  waitFor: (re: RegExp, ms?: number) => Promise<RegExpExecArray | null>;
  stop: () => Promise<void>;
};

/** Runs a binary until its output matches pattern. */
function startProcess(cmd: string, args: string[], env: Record<string, string>, pattern: RegExp, label: string, logPrefix = ""): Promise<Started> {
  return new Promise((resolveStart, rejectStart) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let log = logPrefix;
    let started = false;
    const onData = (chunk: Buffer) => {
      log += chunk.toString();
      const m = pattern.exec(log.slice(logPrefix.length));
      if (!m || started) return;
      started = true;
      resolveStart({
        match: m,
        log: () => log,
        waitFor: async (re, ms = 5000) => {
          const end = Date.now() + ms;
          for (;;) {
            const found = re.exec(log);
            if (found || Date.now() > end) return found;
            await new Promise((r) => setTimeout(r, 50));
          }
        },
        stop: () => new Promise<void>((done) => {
          if (child.exitCode !== null || child.signalCode !== null) return done();
          child.once("exit", () => done());
          child.kill("SIGTERM");
          setTimeout(() => child.kill("SIGKILL"), 8000).unref();
        }),
      });
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("error", (err) => { if (!started) rejectStart(new Error(`${label} could not be started: ${err.message}`)); });
    child.once("exit", (code) => {
      if (!started) rejectStart(new Error(`${label} exited with ${code} before it was ready:\n${log}`));
    });
    setTimeout(() => {
      if (!started) { child.kill("SIGKILL"); rejectStart(new Error(`${label} did not start in 30 s:\n${log}`)); }
    }, 30000).unref();
  });
}

/** A running toolgate (see startToolgate). */
export type Toolgate = {
  /** Where it listens, e.g. http://127.0.0.1:41234 (the tests' baseURL). */
  url: string;
  /** Its own database (dropped when the test ends). */
  databaseURL: string;
  /** The one-time sign-in link of the offline demo's admin, demo@toolgate.local (null when none was printed). */
  signInLink: string | null;
  /** The first-run setup link (null when an account exists). */
  setupLink: string | null;
  /** Everything it logged so far (stdout and stderr, across restarts). */
  log: () => string;
  /** Waits up to ms for the log to match re; the match, or null. */
  waitFor: (re: RegExp, ms?: number) => Promise<RegExpExecArray | null>;
  /** Stops the process (SIGTERM); the database stays until the test ends. */
  stop: () => Promise<void>;
  /** Stops it if running and starts it again on the same database and ports (env is added to the first start's). */
  restart: (env?: Record<string, string>) => Promise<void>;
  /** A personal API token (tg_…) for the user with this email, made by `toolgate token create`. */
  createToken: (email: string, name?: string) => Promise<string>;
  /** Stops it and drops its database. */
  destroy: () => Promise<void>;
};

let started = 0;

/**
 * Starts toolgate offline on a new database. The demo MCP server is
 * registered as "demo" (tools get_forecast, list_forecasts, set_forecast,
 * delete_forecast, send_alert, reset_forecasts).
 */
export async function startToolgate(name: string, extraEnv: Record<string, string> = {}): Promise<Toolgate> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) throw new Error("TEST_DATABASE_URL is not set");
  const db = `tg_e2e_${name.replace(/\W/g, "_").slice(0, 32)}_${process.pid}_${++started}`.toLowerCase();
  const dbURL = new URL(base);
  dbURL.pathname = "/" + db;
  const databaseURL = dbURL.toString();
  dropDatabase(db);
  const keyFile = join(tmpdir(), `${db}.secrets.key`);
  rmSync(keyFile, { force: true });
  let env: Record<string, string> = {
    OPENAI_API_KEY: "",
    OPENAI_BASE_URL: "",
    DATABASE_URL: databaseURL,
    LISTEN_ADDR: "127.0.0.1:0",
    EMULATOR_ADDR: "127.0.0.1:0",
    DEMO_MCP_ADDR: "127.0.0.1:0",
    WEB_DIR: embedded ? "" : distDir,
    LOG_FORMAT: "text",
    TOOLGATE_ADMIN_EMAIL: "",
    TOOLGATE_ADMIN_PASSWORD: "",
    AUTH_MODE: "local",
    // Offline, the key for header secrets is a file made on first run: one per test, outside the repo.
    SECRETS_KEY: "",
    SECRETS_KEY_FILE: keyFile,
    ...extraEnv,
  };
  const listening = /toolgate is listening"? url=(http:\/\/[^\s"]+)/;
  if (!embedded) await distBuilt();
  let proc = await startProcess(join(binDir, "toolgate"), [], env, listening, "toolgate");
  if (/web app not built/.test(proc.log())) {
    await proc.stop();
    dropDatabase(db);
    throw new Error(`${distDir} had no index.html when toolgate started: was "npm run build" (vite) emptying it just then? Run the test again once the build is done.`);
  }
  const url = proc.match[1];
  // The printed links may name LISTEN_ADDR's host and port 0; the token goes on the real address.
  const signIn = await proc.waitFor(/toolgate: sign in: \S*\/api\/auth\/link\?token=([^\s"]+)/, 1000);
  const setup = signIn ? null : await proc.waitFor(/\/setup\?token=([^\s"]+)/, 1000);
  const address = (re: RegExp) => re.exec(proc.log())?.[1];
  return {
    url,
    databaseURL,
    signInLink: signIn ? `${url}/api/auth/link?token=${signIn[1]}` : null,
    setupLink: setup ? `${url}/setup?token=${setup[1]}` : null,
    log: () => proc.log(),
    waitFor: (re, ms) => proc.waitFor(re, ms),
    stop: () => proc.stop(),
    restart: async (more = {}) => {
      await proc.stop();
      // The same ports, so the page, its cookie and the registered demo server stay valid.
      const emulator = address(/emulator=http:\/\/([^/\s"]+)/);
      const demo = address(/demo_mcp_server=http:\/\/([^/\s"]+)/);
      env = {
        ...env,
        LISTEN_ADDR: new URL(url).host,
        ...(emulator ? { EMULATOR_ADDR: emulator } : {}),
        ...(demo ? { DEMO_MCP_ADDR: demo } : {}),
        ...more,
      };
      proc = await startProcess(join(binDir, "toolgate"), [], env, listening, "toolgate (restarted)",
        proc.log() + "\n---- restarted ----\n");
    },
    createToken: (email, tokenName = "e2e") => new Promise((done, fail) => {
      execFile(join(binDir, "toolgate"), ["token", "create", email, tokenName], { env: { ...process.env, ...env } },
        (err, stdout, stderr) => {
          const token = stdout.trim();
          if (err || !token.startsWith("tg_")) fail(new Error(`toolgate token create ${email}: ${err?.message ?? ""}\n${stderr}${stdout}`));
          else done(token);
        });
    }),
    destroy: async () => {
      await proc.stop();
      dropDatabase(db);
      rmSync(keyFile, { force: true });
    },
  };
}

/** Starts the standalone demo MCP server (bin/demo-mcp), requiring a bearer token. */
export async function startDemoMCP(token: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const proc = await startProcess(join(binDir, "demo-mcp"), ["-addr", "127.0.0.1:0", "-token", token], {},
    /serving MCP"? url=(http:\/\/[^\s"]+)/, "demo-mcp");
  return { url: proc.match[1], stop: proc.stop };
}

/** Waits (up to 60 s) for frontend/dist/index.html: a vite build running at the same time empties dist first. */
async function distBuilt(): Promise<void> {
  const index = join(distDir, "index.html");
  for (const end = Date.now() + 60_000; !existsSync(index) && Date.now() < end;) await new Promise((r) => setTimeout(r, 250));
}

function dropDatabase(db: string): void {
  try {
    execFileSync("psql", [process.env.TEST_DATABASE_URL ?? "", "-qc", `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`], { stdio: "ignore" });
  } catch { /* psql missing or the server refused: a leftover database harms nothing */ }
}
