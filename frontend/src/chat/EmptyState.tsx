// A new chat before its first message: what this is, and in the offline
// demo, messages that make the emulated model call a demo tool.
import { Trans, useTranslation } from "react-i18next";

const suggestions = ["list_forecasts", 'delete_forecast {"city": "Oslo"}', 'get_forecast {"city": "Berlin"} delete_forecast {"city": "Lisbon"}'];

export function EmptyState({ offline, onPick }: { offline: boolean; onPick(text: string): void }) {
  const { t } = useTranslation("chat");
  return (
    <div className="chat-empty">
      <h2>{t("empty.title")}</h2>
      <p><Trans t={t} i18nKey="empty.text" components={{ em: <em /> }} /></p>
      {offline && (
        <>
          <p className="muted">{t("empty.offline")}</p>
          <ul className="suggestions">
            {suggestions.map((s) => (
              <li key={s}><button type="button" className="suggestion" onClick={() => onPick(s)}><code>{s}</code></button></li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
