// The server form's headers: one row per header (name, secret value, remove),
// "+ Add header", and which stored headers a save will remove.
import type { KeyboardEvent, ReactNode } from "react";
import { Trans, useTranslation } from "react-i18next";
import { newRow, removedHeaders, type HeaderRow } from "./headers";

interface Props {
  /** The form's id prefix. */
  id: string;
  rows: HeaderRow[];
  onRows: (update: (rows: HeaderRow[]) => HeaderRow[]) => void;
  /** The stored (masked) headers when editing a server. */
  existing?: Record<string, string>;
  /** The props of an input for a field: aria-invalid and the error's id. */
  field: (name: string) => { "aria-invalid"?: true; "aria-describedby"?: string };
  errorFor: (name: string) => ReactNode;
  onKeyDown: (e: KeyboardEvent) => void;
}

export function HeaderEditor({ id, rows, onRows, existing, field, errorFor, onKeyDown }: Props) {
  const { t } = useTranslation("settings");
  const update = (key: string, patch: Partial<HeaderRow>) =>
    onRows((rs) => rs.map((r) => (r.key === key ? { ...r, ...patch } : r)));
  const removed = existing ? removedHeaders(existing, rows) : [];

  return (
    <fieldset className="headers-fieldset" aria-describedby={`${id}-headers-hint`}>
      <legend>{t("form.headers")}</legend>
      <p id={`${id}-headers-hint`} className="field-hint">
        <Trans t={t} i18nKey="form.headersHint" components={{ code: <code /> }} />
        {existing && rows.some((r) => r.existing) && ` ${t("form.headersKeepHint")}`}
      </p>
      {errorFor("headers")}
      {rows.length > 0 && (
        <ul className="header-rows">
          {rows.map((r) => {
            const nameKey = `${r.key}.name`;
            const valueKey = `${r.key}.value`;
            return (
              <li key={r.key} className="header-row">
                <div className="form-field">
                  <label htmlFor={`${id}-${nameKey}`}>{t("form.headerName")}</label>
                  <input
                    id={`${id}-${nameKey}`}
                    value={r.name}
                    readOnly={!!r.existing}
                    className={r.existing ? "readonly" : undefined}
                    onChange={(e) => update(r.key, { name: e.target.value })}
                    onKeyDown={onKeyDown}
                    autoComplete="off"
                    spellCheck={false}
                    placeholder="Authorization"
                    {...field(nameKey)}
                  />
                  {errorFor(nameKey)}
                </div>
                <div className="form-field">
                  <label htmlFor={`${id}-${valueKey}`}>{t("form.headerValue")}</label>
                  <input
                    id={`${id}-${valueKey}`}
                    type="password"
                    value={r.value}
                    onChange={(e) => update(r.key, { value: e.target.value })}
                    onKeyDown={onKeyDown}
                    autoComplete="new-password"
                    spellCheck={false}
                    placeholder={r.existing ? t("form.unchanged", { masked: r.masked ?? "********" }) : "Bearer …"}
                    {...field(valueKey)}
                  />
                  {errorFor(valueKey)}
                </div>
                <button
                  type="button"
                  className="remove-header"
                  aria-label={t("form.removeHeader", { name: (r.existing ?? r.name) || t("form.unnamed") })}
                  title={t("form.removeHeaderTitle")}
                  onClick={() => onRows((rs) => rs.filter((x) => x.key !== r.key))}
                  onKeyDown={onKeyDown}
                >
                  ×
                </button>
              </li>
            );
          })}
        </ul>
      )}
      {removed.length > 0 && (
        <p className="field-hint removed-note">
          {t("form.willBeRemoved")}{" "}
          {removed.map((n, i) => <span key={n}>{i > 0 && ", "}<code>{n}</code></span>)}
        </p>
      )}
      <button type="button" className="link add-header" onClick={() => onRows((rs) => [...rs, newRow()])} onKeyDown={onKeyDown}>
        {t("form.addHeader")}
      </button>
    </fieldset>
  );
}
