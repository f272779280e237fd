// Relative times ("3 minutes ago") with the absolute time at hand.
import { useEffect, useState } from "react";

const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const abs = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

export function absoluteTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : abs.format(d);
}

export function relativeTime(iso: string, now: number = Date.now()): string {
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return iso;
  const s = Math.round((t - now) / 1000);
  const a = Math.abs(s);
  if (a < 45) return "just now";
  if (a < 45 * 60) return rtf.format(Math.round(s / 60), "minute");
  if (a < 22 * 3600) return rtf.format(Math.round(s / 3600), "hour");
  if (a < 26 * 86400) return rtf.format(Math.round(s / 86400), "day");
  if (a < 320 * 86400) return rtf.format(Math.round(s / (30 * 86400)), "month");
  return rtf.format(Math.round(s / (365 * 86400)), "year");
}

/** The current time, updated every `ms` so relative times stay true. */
export function useNow(ms = 30_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

/** <time> showing "3 minutes ago", with the absolute time as its tooltip. */
export function RelativeTime({ iso, now }: { iso: string; now: number }) {
  return (
    <time dateTime={iso} title={absoluteTime(iso)}>
      {relativeTime(iso, now)}
    </time>
  );
}
