// A webhook's delivery log: the latest deliveries, newest first, with their
// state, attempts, last status or error and when the next attempt is due.
// Refreshed every few seconds while shown, so a retry can be watched.
import { useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api } from "../api/client";
import { keys } from "../api/query";
import { useFormat } from "../i18n/format";

export function WebhookDeliveries({ id }: { id: string }) {
  const { t } = useTranslation("settings");
  const { dateTime } = useFormat();
  const log = useQuery({ queryKey: keys.webhookDeliveries(id), queryFn: () => api.webhookDeliveries(id), refetchInterval: 3_000 });
  if (log.isPending) return <p className="muted">{t("webhooks.deliveries.loading")}</p>;
  if (!log.data || log.data.length === 0) return <p className="muted">{t("webhooks.deliveries.none")}</p>;
  return (
    <div className="table-scroll">
      <table className="webhook-log">
        <caption className="sr-only">{t("webhooks.deliveries.caption")}</caption>
        <thead>
          <tr>
            <th scope="col">{t("webhooks.deliveries.event")}</th>
            <th scope="col">{t("webhooks.deliveries.state")}</th>
            <th scope="col">{t("webhooks.deliveries.attempts")}</th>
            <th scope="col">{t("webhooks.deliveries.result")}</th>
            <th scope="col">{t("webhooks.deliveries.when")}</th>
          </tr>
        </thead>
        <tbody>
          {log.data.map((d) => (
            <tr key={d.id} className={`delivery-${d.state}`}>
              <td><code>{d.event}</code></td>
              <td>{t(`webhooks.deliveries.states.${d.state}`)}</td>
              <td>{d.attempts}</td>
              <td>{d.error ?? (d.status != null ? `HTTP ${d.status}` : "—")}</td>
              <td>
                {d.delivered_at ? t("webhooks.deliveries.deliveredAt", { at: dateTime(d.delivered_at) })
                  : d.next_attempt_at ? t("webhooks.deliveries.nextAt", { at: dateTime(d.next_attempt_at) })
                    : dateTime(d.created_at)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
