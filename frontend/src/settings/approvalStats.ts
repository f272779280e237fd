// The logic of the Approvals page (ApprovalStatsPage.tsx): which period a
// choice means, how long a median decision took in words, and what to
// suggest for a tool. Kept apart from the component so it is tested alone.
import type { components } from "../api/schema";
import type { Route } from "../router";

export type ToolApprovalStats = components["schemas"]["ToolApprovalStats"];

export const PRESETS = ["7d", "30d", "90d", "custom"] as const;
export type Preset = (typeof PRESETS)[number];

const DAY = 24 * 60 * 60 * 1000;
const presetDays: Record<Exclude<Preset, "custom">, number> = { "7d": 7, "30d": 30, "90d": 90 };
/** The longest period the API counts (GET /api/approvals/stats). */
export const MAX_DAYS = 366;

/** A custom period as the date inputs hold it: "YYYY-MM-DD", both days included. */
export type CustomPeriod = { from: string; to: string };

/** Why a custom period cannot be asked for (each an i18n key under approvalStats.). */
export const PERIOD_ERRORS = ["periodMissing", "periodReversed", "periodTooLong"] as const;
/** What to ask the API for, or why the custom period cannot be asked for. */
export type PeriodQuery = { from: string; to?: string } | { error: (typeof PERIOD_ERRORS)[number] };

/** The counts the table shows per tool, in its order (each an i18n key under approvalStats.col.). */
export const COUNTS = ["ran_unasked", "asked", "approved", "denied", "stopped", "expired", "superseded"] as const;

/** A day of a date input ("2026-11-28") as the start of that day where the person is; null when not a date. */
function localDay(s: string): Date | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return null;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  // new Date rolls an impossible day over (Feb 30 → Mar 2): that is no date.
  return d.getMonth() === Number(m[2]) - 1 && d.getDate() === Number(m[3]) ? d : null;
}

/**
 * The period of a choice at now: a preset is the last N days up to now (to
 * left out: the API's now); a custom period runs from the start of its
 * first day to the end of its last (the start of the day after), in the
 * person's time zone.
 */
export function periodQuery(preset: Preset, custom: CustomPeriod, now: Date = new Date()): PeriodQuery {
  if (preset !== "custom") return { from: new Date(now.getTime() - presetDays[preset] * DAY).toISOString() };
  const from = localDay(custom.from);
  const last = localDay(custom.to);
  if (!from || !last) return { error: "periodMissing" };
  if (last < from) return { error: "periodReversed" };
  const to = new Date(last.getFullYear(), last.getMonth(), last.getDate() + 1);
  if (to.getTime() - from.getTime() > MAX_DAYS * DAY) return { error: "periodTooLong" };
  return { from: from.toISOString(), to: to.toISOString() };
}

/** A date input's value for d ("YYYY-MM-DD", where the person is). */
export function dayValue(d: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

/**
 * A median time to a decision in the largest unit that keeps it readable,
 * in the page's language: "45 sec", "2.5 min", "3 hr", "2 days" (Intl's
 * short units); "—" when nobody decided.
 */
export function formatDuration(seconds: number | null | undefined, lng: string): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "—";
  const s = Math.max(0, seconds);
  const [value, unit] =
    s < 90 ? [s, "second"] : s < 90 * 60 ? [s / 60, "minute"] : s < 48 * 3600 ? [s / 3600, "hour"] : [s / 86400, "day"];
  return new Intl.NumberFormat(lng, {
    style: "unit", unit, unitDisplay: unit === "day" ? "long" : "short",
    maximumFractionDigits: unit === "second" || value >= 10 ? 0 : 1,
  }).format(value);
}

/** The share of asked requests that were approved, as a whole percentage; null when none was asked. */
export function approvalRate(t: Pick<ToolApprovalStats, "asked" | "approved">): number | null {
  return t.asked > 0 ? Math.round((t.approved / t.asked) * 100) : null;
}

/** Where "make it Auto?" leads: the tool's row on the settings page, where its workspace policy is set. */
export function settingRoute(t: Pick<ToolApprovalStats, "server_label" | "tool_name">): Route {
  return { page: "settings", server: t.server_label, tool: t.tool_name };
}
