// Test helpers: a fake fetch that routes by method and path, and SSE bodies.
import { vi } from "vitest";

export function sse(events: [string, unknown][]): string {
  let s = ": ping\n\n";
  events.forEach(([name, data], i) => { s += `id: ${i + 1}\nevent: ${name}\ndata: ${JSON.stringify(data)}\n\n`; });
  return s;
}

/** A body whose chunks the test pushes, and closes, when it wants. */
export function controlledBody() {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const enc = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({ start(c) { ctl = c; } });
  return {
    stream,
    push: (s: string) => ctl.enqueue(enc.encode(s)),
    close: () => ctl.close(),
  };
}

export function sseResponse(body: string | ReadableStream<Uint8Array>, headers: Record<string, string> = {}) {
  return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream; charset=utf-8", ...headers } });
}

export function jsonResponse(status: number, body: unknown) {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

type Handler = (req: { method: string; path: string; body: unknown; init: RequestInit }) => Response | Promise<Response>;

/** Installs a fetch that answers with the first route matching "METHOD /path". */
export function mockFetch(routes: Record<string, Handler>) {
  const calls: { method: string; path: string; body: unknown }[] = [];
  const fn = vi.fn(async (input: RequestInfo | URL, init: RequestInit = {}) => {
    // The generated client (openapi-fetch) passes a Request; the stream hook a path and init.
    let method: string, path: string, body: unknown;
    if (input instanceof Request) {
      method = input.method.toUpperCase();
      const u = new URL(input.url);
      path = u.pathname + u.search;
      const text = await input.clone().text();
      body = text ? JSON.parse(text) : undefined;
      init = { method, signal: input.signal, headers: input.headers, body: text || undefined };
    } else {
      method = (init.method ?? "GET").toUpperCase();
      path = String(input);
      body = typeof init.body === "string" && init.body ? JSON.parse(init.body) : undefined;
    }
    calls.push({ method, path, body });
    const h = routes[`${method} ${path}`];
    if (!h) return jsonResponse(404, { error: { code: "not_found", message: `no route ${method} ${path}` } });
    if (init.signal?.aborted) throw new DOMException("aborted", "AbortError");
    return h({ method, path, body, init });
  });
  vi.stubGlobal("fetch", fn);
  return { fn, calls };
}
