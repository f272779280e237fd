// Dates, times and numbers formatted for the app's language (Intl), so a
// German page says "22.11.2026, 14:05" and "1.234", an English one
// "11/22/2026, 2:05 PM" and "1,234".
import { useTranslation } from "react-i18next";

export function formatDateTime(iso: string | Date, lng: string, opts: Intl.DateTimeFormatOptions = { dateStyle: "medium", timeStyle: "short" }): string {
  const d = typeof iso === "string" ? new Date(iso) : iso;
  if (Number.isNaN(d.getTime())) return String(iso);
  return new Intl.DateTimeFormat(lng, opts).format(d);
}

export function formatNumber(n: number, lng: string, opts?: Intl.NumberFormatOptions): string {
  return new Intl.NumberFormat(lng, opts).format(n);
}

/**
 * "3 minutes ago", "vor 3 Minuten". With `past` (something that happened:
 * a refresh, a check, an audit entry) a time after `now` says "now", never
 * "in 2 seconds": the page's clock ticks every 30 s and the server's may be
 * a little ahead.
 */
export function formatRelative(iso: string | Date, lng: string, now: number = Date.now(), past = false): string {
  const d = typeof iso === "string" ? new Date(iso) : iso;
  const raw = Math.round((d.getTime() - now) / 1000);
  const secs = past ? Math.min(raw, 0) : raw;
  const rtf = new Intl.RelativeTimeFormat(lng, { numeric: "auto" });
  const abs = Math.abs(secs);
  if (abs < 60) return rtf.format(secs, "second");
  if (abs < 3600) return rtf.format(Math.round(secs / 60), "minute");
  if (abs < 86400) return rtf.format(Math.round(secs / 3600), "hour");
  return rtf.format(Math.round(secs / 86400), "day");
}

/** The formatters bound to the current language. */
export function useFormat() {
  const { i18n } = useTranslation();
  const lng = i18n.resolvedLanguage ?? i18n.language ?? "en";
  return {
    lng,
    dateTime: (iso: string | Date, opts?: Intl.DateTimeFormatOptions) => formatDateTime(iso, lng, opts),
    number: (n: number, opts?: Intl.NumberFormatOptions) => formatNumber(n, lng, opts),
    relative: (iso: string | Date) => formatRelative(iso, lng),
  };
}
