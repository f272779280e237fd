// One audit entry: when, who, and what in plain words with links to the
// server or tool and the conversation, and the raw before / after on demand.
// On a narrow screen the row is a stacked card (settings.css).
import { useTranslation } from "react-i18next";
import type { AuditEntry } from "../api/types";
import { linkProps } from "../router";
import { describe, type Part } from "./auditText";
import { useTimes } from "./time";

export function AuditRow({ entry, now, focusRef }: { entry: AuditEntry; now: number; focusRef?: (el: HTMLElement | null) => void }) {
  const { t } = useTranslation("settings");
  const times = useTimes();
  const d = describe(entry, t);
  return (
    <tr ref={focusRef} data-entry={entry.id} tabIndex={-1} className={d.tone ? `tone-${d.tone}` : undefined}>
      <td className="col-when">
        <time dateTime={entry.at} title={times.absolute(entry.at)}>{times.relative(entry.at, now)}</time>
        <span className="abs-time">{times.absolute(entry.at)}</span>
      </td>
      <td className="col-who">{entry.actor}</td>
      <td className="col-what">
        <div className="what">
          <span className="action-tag">{entry.action}</span>
          <span className="what-text">{d.parts.map((p, i) => <PartView key={i} part={p} />)}</span>
        </div>
        {d.details.map((line, i) => <div key={i} className="what-detail">{line}</div>)}
        <div className="what-links">
          {d.conversationId && (
            <a {...linkProps({ page: "chat", conversationId: d.conversationId })}>{t("audit.openConversation")}</a>
          )}
          <details>
            <summary>{t("audit.beforeAfter")}</summary>
            <div className="before-after">
              <div><span className="muted small">{t("audit.before")}</span><pre>{JSON.stringify(entry.before, null, 2)}</pre></div>
              <div><span className="muted small">{t("audit.after")}</span><pre>{JSON.stringify(entry.after, null, 2)}</pre></div>
            </div>
          </details>
        </div>
      </td>
    </tr>
  );
}

function PartView({ part }: { part: Part }) {
  if (typeof part === "string") return <>{part}</>;
  if (!part.server) return null;
  const text = part.tool ? `${part.server}/${part.tool}` : part.server;
  return <a className="ref" {...linkProps({ page: "settings", server: part.server, tool: part.tool })}>{text}</a>;
}
