// npm run bench -- [TURNS] [DELTAS]: runs the load test e2e/bench.ts (a
// conversation of TURNS turns, default 100, then one answer of DELTAS pieces,
// default 400) with Playwright and prints its measurements as one JSON line.
// Needs what the browser tests need (e2e/README.md): make build first.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const frontend = join(dirname(fileURLToPath(import.meta.url)), "..");
const [turns = "100", deltas = "400"] = process.argv.slice(2);
const run = spawnSync(process.execPath,
  [join(frontend, "node_modules/@playwright/test/cli.js"), "test", "--config", "e2e/bench.config.ts"], {
    cwd: frontend,
    stdio: "inherit",
    env: {
      TEST_DATABASE_URL: "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
      ...process.env,
      BENCH_TURNS: turns,
      BENCH_DELTAS: deltas,
    },
  });
process.exit(run.status ?? 1);
