import { QueryClientProvider, useMutation, type QueryKey } from "@tanstack/react-query";
import { act, renderHook, waitFor } from "@testing-library/react";
import type { ReactNode } from "react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { keys, newTestQueryClient } from "../api/query";
import { controlledBody, frame, jsonResponse, mockFetch, sseResponse } from "../chat/testutil";
import { settingsEventsTiming, useSettingsEvents } from "./useSettingsEvents";

const timing = { ...settingsEventsTiming };
beforeEach(() => Object.assign(settingsEventsTiming, { baseDelayMs: 10, maxDelayMs: 40 }));
afterEach(() => {
  Object.assign(settingsEventsTiming, timing);
  vi.unstubAllGlobals();
});

const path = "GET /api/settings/events";
const shown: QueryKey[] = [keys.servers, keys.tools("demo"), keys.settings, keys.rules(), keys.rules("demo", "x"),
  ["approvalCards", "demo"], ["decision-hook", ""], keys.webhooks];
const headerOf = (init: RequestInit, name: string) => (init.headers as Record<string, string> | undefined)?.[name];

/** The hook on a page whose queries all hold data, fresh. */
function setup() {
  const client = newTestQueryClient();
  for (const k of shown) client.setQueryData(k, []);
  const wrapper = ({ children }: { children: ReactNode }) => <QueryClientProvider client={client}>{children}</QueryClientProvider>;
  const hook = renderHook(() => {
    useSettingsEvents();
    return useMutation({ mutationFn: (p: Promise<void>) => p });
  }, { wrapper });
  const stale = () => shown.filter((k) => client.getQueryState(k)?.isInvalidated).map((k) => JSON.stringify(k));
  const fresh = () => shown.forEach((k) => client.setQueryData(k, []));
  return { ...hook, client, stale, fresh };
}

const changed = (id: number, kinds: string[]) => frame(id, "settings.changed", { version: id, kinds });

describe("useSettingsEvents", () => {
  it("reads again what each kind of change shows, and nothing else", async () => {
    const body = controlledBody();
    mockFetch({ [path]: () => sseResponse(body.stream, { "X-Settings-Version": "7" }) });
    const { stale, fresh } = setup();
    await waitFor(() => expect(vi.mocked(fetch)).toHaveBeenCalled());

    act(() => body.push(": ping\n\n" + changed(8, ["workspace"])));
    await waitFor(() => expect(stale()).toEqual([keys.servers, keys.tools("demo"), keys.settings, keys.rules(), keys.rules("demo", "x"),
      ["approvalCards", "demo"]].map((k) => JSON.stringify(k))));

    fresh();
    act(() => body.push(changed(8, ["personal"])));
    await waitFor(() => expect(stale()).toEqual([keys.servers, keys.tools("demo")].map((k) => JSON.stringify(k))));

    fresh();
    act(() => body.push(changed(8, ["webhook", "decision_hook"])));
    await waitFor(() => expect(stale()).toEqual([["decision-hook", ""], keys.webhooks].map((k) => JSON.stringify(k))));

    fresh();
    act(() => body.push(changed(8, ["something_new"])));
    await waitFor(() => expect(stale()).toHaveLength(shown.length));
  });

  it("waits for the page's own change in flight: an earlier read never undoes an optimistic choice", async () => {
    const body = controlledBody();
    mockFetch({ [path]: () => sseResponse(body.stream) });
    const { result, stale } = setup();
    await waitFor(() => expect(vi.mocked(fetch)).toHaveBeenCalled());
    let save!: () => void;
    act(() => result.current.mutate(new Promise<void>((r) => { save = r; })));
    await waitFor(() => expect(result.current.isPending).toBe(true));

    act(() => body.push(changed(9, ["workspace"])));
    await new Promise((r) => setTimeout(r, 50));
    expect(stale()).toEqual([]);
    act(() => save());
    await waitFor(() => expect(stale()).toContain(JSON.stringify(keys.servers)));
  });

  it("after a drop, reconnects from the last id and reads everything again", async () => {
    const first = controlledBody();
    const second = controlledBody();
    const inits: RequestInit[] = [];
    const bodies = [first, second];
    mockFetch({ [path]: ({ init }) => { inits.push(init); return sseResponse(bodies[inits.length - 1].stream, { "X-Settings-Version": "3" }); } });
    const { stale, fresh } = setup();
    await waitFor(() => expect(inits).toHaveLength(1));
    expect(headerOf(inits[0], "Last-Event-ID")).toBeUndefined();
    expect(headerOf(inits[0], "Accept")).toBe("text/event-stream");
    act(() => first.push(changed(5, ["card"])));
    await waitFor(() => expect(stale()).toEqual([JSON.stringify(["approvalCards", "demo"])]));
    fresh();

    act(() => first.close());
    await waitFor(() => expect(inits).toHaveLength(2));
    expect(headerOf(inits[1], "Last-Event-ID")).toBe("5");
    await waitFor(() => expect(stale()).toHaveLength(shown.length));
  });

  it("stops when the server refuses (signed out): no retry loop", async () => {
    const { calls } = mockFetch({ [path]: () => jsonResponse(401, { error: { code: "unauthenticated", message: "sign in" } }) });
    setup();
    await waitFor(() => expect(calls).toHaveLength(1));
    await new Promise((r) => setTimeout(r, 100));
    expect(calls).toHaveLength(1);
  });
});
