// A server's health as the last check found it (discovery, the background
// re-check, or a chat whose model could not reach it): a badge beside its
// label, and while it cannot be reached, since when, why, and that chats
// leave it out meanwhile. It never says "reachable" unless the last check
// reached the server.
import { useTranslation } from "react-i18next";
import type { ServerHealth } from "../api/types";
import { RelativeTime, useTimes } from "./time";

/** "Reachable", "Unreachable", "Slow" or "Not checked yet", beside the server's label. */
export function HealthBadge({ health }: { health: ServerHealth }) {
  const { t } = useTranslation("settings");
  switch (health.status) {
    case "ok":
      return <span className="badge health-badge health-ok" title={t("health.okTitle")}>{t("health.ok")}</span>;
    case "unreachable":
      return <span className="badge health-badge health-down">{t("health.unreachable")}</span>;
    case "slow":
      return <span className="badge health-badge health-down" title={t("health.slowTitle")}>{t("health.slow")}</span>;
    default:
      return <span className="badge health-badge health-unknown" title={t("health.unknownTitle")}>{t("health.unknown")}</span>;
  }
}

/** While the server cannot be reached, or is too slow to list its tools: since when, why, and what that means for chats. */
export function HealthDetail({ health, now }: { health: ServerHealth; now: number }) {
  const { t } = useTranslation("settings");
  const times = useTimes();
  if (health.status !== "unreachable" && health.status !== "slow") return null;
  const slow = health.status === "slow";
  return (
    <p className="server-health-detail" role="status">
      <span className="status-error">
        {t(slow ? "health.slowSince" : "health.since")}{" "}
        {health.since
          ? <time dateTime={health.since} title={times.relative(health.since, now)}>{times.absolute(health.since)}</time>
          : t("health.sinceUnknown")}
        {health.last_error && <>: {health.last_error}</>}
      </span>
      {" · "}{t(slow ? "health.slowLeftOut" : "health.leftOut")}
      {health.checked_at && <> {t("health.checked")} <RelativeTime iso={health.checked_at} now={now} />.</>}
      {health.ok_at && <> {t("health.lastOK")} <RelativeTime iso={health.ok_at} now={now} />.</>}
    </p>
  );
}
