// On a request the model made after a denial with a correction: what changed
// since the denied request ("city: Paris → Berlin"), and whether it asks
// exactly what the correction said.
import { useTranslation } from "react-i18next";
import type { Corrects } from "../api/types";
import { REDACTED } from "./JsonView";
import { inline } from "./correctionForm";

function Value({ v, kind }: { v: unknown; kind: "before" | "after" }) {
  const { t } = useTranslation("chat");
  if (v === undefined) return <span className="muted">{t(kind === "before" ? "corrects.absent" : "corrects.removed")}</span>;
  const text = v === REDACTED ? t("json.hidden") : inline(v);
  return kind === "before" ? <del className="corrects-before">{text}</del> : <ins className="corrects-after">{text}</ins>;
}

export function CorrectsNote({ corrects }: { corrects: Corrects }) {
  const { t } = useTranslation("chat");
  const changes = corrects.changes ?? [];
  return (
    <section className={`corrects-note${corrects.matches_correction ? " matches" : " differs"}`} aria-label={t("corrects.label")}>
      <p className="corrects-title">
        <strong>{t(changes.length > 0 ? "corrects.changed" : "corrects.unchanged")}</strong>{" "}
        <span>{t(corrects.matches_correction ? "corrects.matches" : "corrects.differs")}</span>
      </p>
      {changes.length > 0 && (
        <ul className="corrects-changes">
          {changes.map((c) => (
            <li key={c.path}>
              <code>{c.path || t("corrects.wholeArguments")}</code>:{" "}
              <Value v={c.before} kind="before" /> <span aria-hidden="true">→</span>
              <span className="sr-only"> {t("corrects.to")} </span> <Value v={c.after} kind="after" />
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
