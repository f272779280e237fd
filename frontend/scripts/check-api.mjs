// Fails when src/api/schema.d.ts is not what `npm run gen:api` makes from
// docs/openapi.yaml now: the committed client must never lag the spec.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dir = mkdtempSync(join(tmpdir(), "toolgate-api-"));
try {
  const fresh = join(dir, "schema.d.ts");
  execFileSync("npx", ["openapi-typescript", "../docs/openapi.yaml", "--default-non-nullable", "false", "-o", fresh], { stdio: "pipe" });
  if (readFileSync(fresh, "utf8") !== readFileSync("src/api/schema.d.ts", "utf8")) {
    console.error("src/api/schema.d.ts is stale: docs/openapi.yaml changed. Run `npm run gen:api` in frontend/ and commit the result.");
    process.exit(1);
  }
  console.log("src/api/schema.d.ts matches docs/openapi.yaml");
} finally {
  rmSync(dir, { recursive: true, force: true });
}
