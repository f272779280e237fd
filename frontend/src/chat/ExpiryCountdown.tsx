// How long a pending approval request has left before it expires
// (APPROVAL_TTL): "expires in 12:34", then "expired". The server expires it;
// this only tells the person how long they have.
import { useEffect, useState } from "react";
import { useTranslation } from "react-i18next";

/** m:ss, or h:mm:ss from an hour on. */
export function formatLeft(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const ss = String(s).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

/**
 * Whether the time up to expiresAt is up (on this browser's clock): true
 * from the moment it is, re-rendering then. A request whose time is up
 * cannot be decided, whether or not the server's sweep has run yet (the
 * server refuses it: 409 approval_expired).
 */
export function useTimeUp(expiresAt: string | null | undefined): boolean {
  const at = expiresAt ? Date.parse(expiresAt) : NaN;
  const [now, setNow] = useState(() => Date.now());
  const up = !Number.isNaN(at) && now >= at;
  useEffect(() => {
    if (Number.isNaN(at) || up) return;
    // setTimeout holds at most 2^31-1 ms; a later deadline sets another.
    const id = setTimeout(() => setNow(Date.now()), Math.min(Math.max(0, at - Date.now()), 2 ** 31 - 1));
    return () => clearTimeout(id);
  }, [at, up, now]);
  return up;
}

export function ExpiryCountdown({ expiresAt }: { expiresAt: string | null | undefined }) {
  const { t } = useTranslation("chat");
  const at = expiresAt ? Date.parse(expiresAt) : NaN;
  const [now, setNow] = useState(() => Date.now());
  const left = at - now;
  const ticking = !Number.isNaN(at) && left > 0;
  useEffect(() => {
    if (!ticking) return;
    const id = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(id);
  }, [ticking]);
  if (Number.isNaN(at)) return null;
  return (
    <p className={`approval-expiry${left <= 0 ? " is-expired" : ""}`} title={new Date(at).toLocaleString()}>
      {left <= 0 ? t("card.expired") : t("card.expiresIn", { left: formatLeft(left) })}
    </p>
  );
}
