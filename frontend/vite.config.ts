import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import type { Plugin } from "vite";
import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

// precompress writes name.br and name.gz next to each built text file, for
// the API to serve to browsers that accept them (internal/http/web.go). At
// build time rather than per request: the bytes are final, brotli comes
// with Node's zlib (no dependency here or in go.mod), and the server has
// nothing to cache or invalidate. A variant that is not smaller is dropped.
function precompress(): Plugin {
  return {
    name: "toolgate-precompress",
    apply: "build",
    writeBundle(options, bundle) {
      const dir = options.dir ?? "dist";
      for (const fileName of Object.keys(bundle)) {
        if (!/\.(js|mjs|css|html|svg|json|txt)$/.test(fileName)) continue;
        const path = join(dir, fileName);
        const body = readFileSync(path);
        if (body.length < 1024) continue;
        // Brotli quality 10: 2% larger than 11 in a third of the time.
        const brotli = { [constants.BROTLI_PARAM_QUALITY]: 10, [constants.BROTLI_PARAM_SIZE_HINT]: body.length };
        const variants: [string, Buffer][] = [
          [".br", brotliCompressSync(body, { params: brotli })],
          [".gz", gzipSync(body, { level: 9 })],
        ];
        for (const [ext, z] of variants) {
          if (z.length < body.length) writeFileSync(path + ext, z);
        }
      }
    },
  };
}

// `npm run dev` serves the app on :5173 with hot reload and proxies the API
// to a running Toolgate (`make run`, or TOOLGATE_URL). The proxy passes SSE
// through unbuffered.
const target = process.env.TOOLGATE_URL ?? "http://127.0.0.1:8080";

export default defineConfig({
  plugins: [react(), precompress()],
  server: {
    proxy: {
      "/api": { target, changeOrigin: false },
      "/healthz": { target },
    },
  },
  // No source maps: they would publish the source (the API also answers 404
  // for any .map).
  build: { outDir: "dist", sourcemap: false },
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.{ts,tsx}"],
    setupFiles: ["./src/test-setup.ts"],
  },
});
