import { renderHook } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Approval } from "../api/types";
import { approval } from "./testutil";
import { attentionTitle, useAttention } from "./useAttention";

let hidden = false;
const shown: { title: string; body?: string }[] = [];
let permission: NotificationPermission = "granted";
const requested = vi.fn(async () => permission);

class FakeNotification {
  static get permission() { return permission; }
  static requestPermission = requested;
  onclick: (() => void) | null = null;
  constructor(title: string, opts?: NotificationOptions) { shown.push({ title, body: opts?.body }); }
  close() {}
}

function setHidden(h: boolean) {
  hidden = h;
  document.dispatchEvent(new Event("visibilitychange"));
}

beforeEach(() => {
  hidden = false;
  permission = "granted";
  shown.length = 0;
  requested.mockClear();
  Object.defineProperty(document, "hidden", { configurable: true, get: () => hidden });
  vi.stubGlobal("Notification", FakeNotification);
});
afterEach(() => { vi.unstubAllGlobals(); });

describe("useAttention", () => {
  it("counts waiting cards in the title only while the tab is hidden", () => {
    expect(attentionTitle(2, true)).toBe("(2) Toolgate");
    const hook = renderHook((p: Approval[]) => useAttention(p), { initialProps: [approval("mcpr_1", "send_alert"), approval("mcpr_2", "delete_forecast")] });
    expect(document.title).toBe("Toolgate");
    setHidden(true);
    expect(document.title).toBe("(2) Toolgate");
    hook.rerender([approval("mcpr_2", "delete_forecast")]);
    expect(document.title).toBe("(1) Toolgate");
    hook.rerender([]);
    expect(document.title).toBe("Toolgate");
  });

  it("notifies of a new card in a hidden tab, naming the tool, once", () => {
    const hook = renderHook((p: Approval[]) => useAttention(p), { initialProps: [] as Approval[] });
    setHidden(true);
    const a = approval("mcpr_1", "send_alert");
    hook.rerender([a]);
    expect(shown).toHaveLength(1);
    expect(shown[0].body).toContain("send_alert");
    hook.rerender([{ ...a }]);
    expect(shown).toHaveLength(1);
  });

  it("does not notify while the tab is visible, and asks for permission there first", () => {
    permission = "default";
    const hook = renderHook((p: Approval[]) => useAttention(p), { initialProps: [] as Approval[] });
    hook.rerender([approval("mcpr_1", "send_alert")]);
    expect(requested).toHaveBeenCalledTimes(1);
    expect(shown).toHaveLength(0);
  });

  it("never asks from a hidden tab, and a refusal stays a refusal", () => {
    permission = "denied";
    const hook = renderHook((p: Approval[]) => useAttention(p), { initialProps: [] as Approval[] });
    setHidden(true);
    hook.rerender([approval("mcpr_1", "send_alert")]);
    expect(requested).not.toHaveBeenCalled();
    expect(shown).toHaveLength(0);
  });
});

describe("useAttention, other conversations", () => {
  it("counts cards waiting elsewhere in the title and notifies when more wait", () => {
    const hook = renderHook(({ p, n }: { p: Approval[]; n: number }) => useAttention(p, n), { initialProps: { p: [] as Approval[], n: 0 } });
    setHidden(true);
    hook.rerender({ p: [], n: 2 });
    expect(document.title).toBe("(2) Toolgate");
    expect(shown).toHaveLength(1);
    hook.rerender({ p: [approval("mcpr_9", "send_alert")], n: 1 });
    expect(document.title).toBe("(2) Toolgate");
    expect(shown).toHaveLength(2); // the new card here, not the one fewer elsewhere
  });
});
