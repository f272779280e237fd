// Whether this page still follows the conversation live: nothing while it
// does, a quiet line while the events stream reconnects, and a way to
// reconnect once it gave up.
import { useTranslation } from "react-i18next";
import type { EventsConnection } from "./useConversationEvents";

export function LiveStatus({ connection, onReconnect }: { connection: EventsConnection; onReconnect(): void }) {
  const { t } = useTranslation("chat");
  if (connection === "retrying") return <p className="muted live-status" role="status">{t("live.retrying")}</p>;
  if (connection !== "off") return null;
  return (
    <p className="alert info live-status">
      {t("live.off")}{" "}
      <button type="button" className="link" onClick={onReconnect}>{t("live.reconnect")}</button>
    </p>
  );
}
