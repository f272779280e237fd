// The one loop that follows a long-lived GET text/event-stream (a
// conversation's events, the settings changes): it connects with fetch,
// reads the body with parseSSE, and connects again after a drop. A stream
// silent for longer than the heartbeats allow counts as a drop; a tab hidden
// for a while lets its stream go (browsers allow few connections per host)
// and connects again once shown, which is not a drop. What a stream means,
// where it resumes and how long it waits after a drop are its follower's.
import { ApiError, send } from "./client";
import { parseSSE, type RawEvent } from "./events";

/** Timing a follower gives the loop; read at each use, so tests may shorten it. */
export interface StreamTiming {
  /** Silence (not even a heartbeat) after which the connection counts as dropped. */
  idleMs: number;
  /** How long a hidden tab keeps its stream. */
  hiddenGraceMs: number;
}

/** What one stream does with the loop's connections. */
export interface StreamFollower {
  /** A connection begins: the Last-Event-ID to send, or null for none. */
  begin(): string | null;
  /** The server answered: the stream is open. */
  opened(res: Response): void;
  /** One event of the stream; "stop" ends the loop. */
  event(raw: RawEvent): "stop" | void;
  /** The server refused (a 4xx other than 408 and 429): the loop ends, trying again would not help. */
  refused(err: ApiError): void;
  /**
   * The connection dropped (or the stream ended); begun: when it began.
   * Returns how long to wait before the next, or null to give up (the loop ends).
   */
  dropped(begun: number): number | null;
}

/** Follows the stream at path until signal aborts, the follower stops or gives up, or the server refuses. */
export async function followStream(path: string, timing: StreamTiming, signal: AbortSignal, f: StreamFollower): Promise<void> {
  while (!signal.aborted) {
    await whenVisible(signal);
    if (signal.aborted) return;
    const conn = new AbortController();
    const leave = () => conn.abort();
    signal.addEventListener("abort", leave);
    let paused = false;
    const unwatchHidden = onHiddenFor(timing.hiddenGraceMs, () => { paused = true; conn.abort(); });
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    const kick = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => conn.abort(), timing.idleMs);
    };
    const begun = Date.now();
    try {
      kick();
      const headers: Record<string, string> = { Accept: "text/event-stream" };
      const cursor = f.begin();
      if (cursor !== null) headers["Last-Event-ID"] = cursor;
      const res = await send(path, { headers, signal: conn.signal, cache: "no-store" });
      f.opened(res);
      if (!res.body) throw new Error("the event stream has no body");
      for await (const raw of parseSSE(tap(res.body, kick), conn.signal)) {
        if (f.event(raw) === "stop") return;
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429) {
        return f.refused(err);
      }
    } finally {
      clearTimeout(watchdog);
      unwatchHidden();
      signal.removeEventListener("abort", leave);
    }
    if (signal.aborted) return;
    if (paused) continue; // hidden: not a failure; resumes once shown
    const delay = f.dropped(begun);
    if (delay === null) return;
    await sleep(delay, signal);
  }
}

/** The body, telling kick about every chunk (heartbeats included). */
function tap(body: ReadableStream<Uint8Array>, kick: () => void): ReadableStream<Uint8Array> {
  return body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, c) { kick(); c.enqueue(chunk); },
  }));
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => { clearTimeout(h); signal.removeEventListener("abort", done); resolve(); };
    const h = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}

/** The delay before the next try after drops drops in a row: base, doubled each time, at most max. */
export function backoff(drops: number, timing: { baseDelayMs: number; maxDelayMs: number }): number {
  return Math.min(timing.maxDelayMs, timing.baseDelayMs * 2 ** (drops - 1));
}

const hidden = () => typeof document !== "undefined" && document.visibilityState === "hidden";

/** Resolves once the page is visible (at once when it is). */
function whenVisible(signal: AbortSignal): Promise<void> {
  if (!hidden()) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      if (hidden() && !signal.aborted) return;
      document.removeEventListener("visibilitychange", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    document.addEventListener("visibilitychange", done);
    signal.addEventListener("abort", done);
  });
}

/** Calls fn once the page has been hidden for ms without being shown again; returns the cleanup. */
function onHiddenFor(ms: number, fn: () => void): () => void {
  if (typeof document === "undefined") return () => {};
  let timer: ReturnType<typeof setTimeout> | undefined;
  const check = () => {
    clearTimeout(timer);
    if (hidden()) timer = setTimeout(fn, ms);
  };
  document.addEventListener("visibilitychange", check);
  check();
  return () => { clearTimeout(timer); document.removeEventListener("visibilitychange", check); };
}
