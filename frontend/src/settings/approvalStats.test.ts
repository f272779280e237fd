import { describe, expect, it } from "vitest";
import { href } from "../router";
import { approvalRate, dayValue, formatDuration, periodQuery, settingRoute } from "./approvalStats";

const now = new Date("2026-11-28T20:00:00Z");
const day = 24 * 60 * 60 * 1000;

describe("periodQuery", () => {
  it("a preset is the last 7, 30 or 90 days up to now (to is the API's now)", () => {
    expect(periodQuery("7d", { from: "", to: "" }, now)).toEqual({ from: new Date(now.getTime() - 7 * day).toISOString() });
    expect(periodQuery("30d", { from: "", to: "" }, now)).toEqual({ from: "2026-10-29T20:00:00.000Z" });
    expect(periodQuery("90d", { from: "", to: "" }, now)).toEqual({ from: "2026-08-30T20:00:00.000Z" });
  });

  it("a custom period runs from the start of its first day to the end of its last, where the person is", () => {
    const q = periodQuery("custom", { from: "2026-11-01", to: "2026-11-03" }, now);
    expect(q).toEqual({ from: new Date(2026, 10, 1).toISOString(), to: new Date(2026, 10, 4).toISOString() });
    // One day: that day, whole.
    expect(periodQuery("custom", { from: "2026-11-01", to: "2026-11-01" }, now))
      .toEqual({ from: new Date(2026, 10, 1).toISOString(), to: new Date(2026, 10, 2).toISOString() });
  });

  it("says what is wrong with a custom period instead of asking for it", () => {
    expect(periodQuery("custom", { from: "", to: "2026-11-03" }, now)).toEqual({ error: "periodMissing" });
    expect(periodQuery("custom", { from: "2026-11-04", to: "2026-11-03" }, now)).toEqual({ error: "periodReversed" });
    expect(periodQuery("custom", { from: "2025-01-01", to: "2026-01-02" }, now)).toEqual({ error: "periodTooLong" }); // 367 days
    expect(periodQuery("custom", { from: "2025-01-01", to: "2026-01-01" }, now)).not.toHaveProperty("error"); // 366 days
    expect(periodQuery("custom", { from: "2026-02-30", to: "2026-03-01" }, now)).toEqual({ error: "periodMissing" });
  });

  it("dayValue is a date input's value in the person's calendar", () => {
    expect(dayValue(new Date(2026, 0, 5, 23, 59))).toBe("2026-01-05");
  });
});

describe("formatDuration", () => {
  it.each([
    [12.4, "en", "12 sec"],
    [89, "en", "89 sec"],
    [150, "en", "2.5 min"],
    [30 * 60, "en", "30 min"],
    [3 * 3600, "en", "3 hr"],
    [3 * 86400, "en", "3 days"],
    [150, "de", "2,5 Min."],
    [3 * 86400, "de", "3 Tage"],
  ])("%s seconds in %s: %s", (s, lng, want) => {
    expect(formatDuration(s, lng)).toBe(want);
  });

  it("says nothing decided with a dash", () => {
    expect(formatDuration(null, "en")).toBe("—");
    expect(formatDuration(undefined, "en")).toBe("—");
  });
});

describe("the suggestion", () => {
  it("leads to the tool's setting on the settings page", () => {
    expect(href(settingRoute({ server_label: "demo", tool_name: "delete_forecast" }))).toBe("/settings?server=demo&tool=delete_forecast");
    expect(href(settingRoute({ server_label: "my server", tool_name: "a&b" }))).toBe("/settings?server=my+server&tool=a%26b");
  });

  it("the approval rate is of the requests asked; none asked has none", () => {
    expect(approvalRate({ asked: 8, approved: 6 })).toBe(75);
    expect(approvalRate({ asked: 3, approved: 2 })).toBe(67);
    expect(approvalRate({ asked: 0, approved: 0 })).toBeNull();
  });
});
