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
