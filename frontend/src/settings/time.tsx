// Relative times ("3 minutes ago", "vor 3 Minuten") with the absolute time
// at hand, in the app's language (useFormat).
import { useEffect, useState } from "react";
import { formatRelative, useFormat } from "../i18n/format";

const valid = (iso: string) => !Number.isNaN(new Date(iso).getTime());

/** The current time, updated every `ms` so relative times stay true. */
export function useNow(ms = 30_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

/** The formatters the settings pages use for times. */
export function useTimes() {
  const fmt = useFormat();
  return {
    absolute: (iso: string) => (valid(iso) ? fmt.dateTime(iso, { dateStyle: "medium", timeStyle: "medium" }) : iso),
    // Every time these pages show has happened; `now` may be up to 30 s old (useNow).
    relative: (iso: string, now: number) => (valid(iso) ? formatRelative(iso, fmt.lng, Math.max(now, Date.now()), true) : iso),
  };
}

/** <time> showing "3 minutes ago", with the absolute time as its tooltip. */
export function RelativeTime({ iso, now }: { iso: string; now: number }) {
  const times = useTimes();
  return (
    <time dateTime={iso} title={times.absolute(iso)}>
      {times.relative(iso, now)}
    </time>
  );
}
