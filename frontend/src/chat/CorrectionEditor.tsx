// "Deny with correction…": the person edits the arguments (a form from the
// tool's inputSchema, or JSON) and denies with them; the model is told to use
// them instead and can ask again. CorrectionPanel reads the tool's schema;
// CorrectionEditor is the form itself.
import { useQuery } from "@tanstack/react-query";
import { useEffect, useId, useMemo, useRef, useState } from "react";
import { useTranslation } from "react-i18next";
import { api } from "../api/client";
import { keys } from "../api/query";
import type { Approval } from "../api/types";
import { REDACTED } from "./JsonView";
import { type Field, type FieldError, type FormValues, fieldsFor, objectFrom, valuesFrom } from "./correctionForm";

export interface CorrectionEditorProps {
  approval: Approval;
  /** The tool's inputSchema, when Toolgate discovered one. */
  schema?: unknown;
  disabled: boolean;
  onSubmit(correction: Record<string, unknown>): void;
  onCancel(): void;
}

/** The editor with the tool's schema, read from the server's tool list (any signed-in user may read it). */
export function CorrectionPanel(props: Omit<CorrectionEditorProps, "schema">) {
  const { approval } = props;
  const { t } = useTranslation("chat");
  const tools = useQuery({
    queryKey: keys.tools(approval.server_label),
    queryFn: () => api.listTools(approval.server_label),
    staleTime: 60_000,
  });
  // It opens below the card's buttons, often past the bottom of the chat: shown whole (as far as it fits) when it opens and when the form replaces "Loading…".
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => { box.current?.scrollIntoView?.({ block: "nearest" }); }, [tools.isPending]);
  const schema = tools.data?.find((t) => t.name === approval.tool_name)?.input_schema;
  return (
    <div ref={box} className="correction-panel">
      {tools.isPending
        ? <p className="correction-loading" role="status">{t("correction.loading")}</p>
        : <CorrectionEditor {...props} schema={schema ?? undefined} />}
    </div>
  );
}

export function CorrectionEditor({ approval, schema, disabled, onSubmit, onCancel }: CorrectionEditorProps) {
  const { t } = useTranslation("chat");
  const ids = useId();
  const fields = useMemo(() => fieldsFor(schema, approval.arguments, approval.redacted), [schema, approval.arguments, approval.redacted]);
  const [mode, setMode] = useState<"form" | "json">(fields.length > 0 ? "form" : "json");
  const [values, setValues] = useState<FormValues>(() => valuesFrom(fields, approval.arguments));
  const [json, setJson] = useState(() => JSON.stringify(approval.arguments ?? {}, null, 2));
  const [errors, setErrors] = useState<Record<string, FieldError>>({});
  const [jsonError, setJsonError] = useState<string | null>(null);

  const parseJson = (): Record<string, unknown> | null => {
    try {
      const v: unknown = JSON.parse(json);
      if (typeof v === "object" && v !== null && !Array.isArray(v)) {
        setJsonError(null);
        return v as Record<string, unknown>;
      }
      setJsonError(t("correction.error.object"));
    } catch {
      setJsonError(t("correction.error.jsonText"));
    }
    return null;
  };

  const switchTo = (next: "form" | "json") => {
    if (next === mode) return;
    if (next === "json") {
      const r = objectFrom(fields, values);
      if ("errors" in r) {
        setErrors(r.errors);
        return;
      }
      setErrors({});
      setJson(JSON.stringify(r.value, null, 2));
    } else {
      const v = parseJson();
      if (!v) return;
      setValues(valuesFrom(fields, v));
    }
    setMode(next);
  };

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    if (disabled) return;
    let value: Record<string, unknown> | null;
    if (mode === "form") {
      const r = objectFrom(fields, values);
      if ("errors" in r) {
        setErrors(r.errors);
        return;
      }
      setErrors({});
      value = r.value;
    } else {
      value = parseJson();
    }
    if (!value) return;
    const missing = fields.filter((f) => f.required && !(f.name in value));
    if (mode === "json" && missing.length > 0) {
      setJsonError(t("correction.error.missing", { fields: missing.map((f) => f.name).join(", ") }));
      return;
    }
    onSubmit(value);
  };

  const errorCount = Object.keys(errors).length;
  const tab = (m: "form" | "json") => ({
    id: `${ids}-tab-${m}`, role: "tab" as const, type: "button" as const, "aria-selected": mode === m,
    "aria-controls": `${ids}-panel-${m}`, tabIndex: mode === m ? 0 : -1, className: `correction-tab${mode === m ? " is-active" : ""}`,
    onClick: () => switchTo(m),
    onKeyDown: (e: React.KeyboardEvent) => {
      if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
        const other = m === "form" ? "json" : "form";
        switchTo(other);
        document.getElementById(`${ids}-tab-${other}`)?.focus();
      }
    },
  });

  return (
    <form className="correction-editor" aria-labelledby={`${ids}-title`} onSubmit={submit} noValidate>
      <h3 id={`${ids}-title`}>{t("correction.title")}</h3>
      <p className="correction-intro">{t("correction.intro")}</p>
      <div role="tablist" aria-label={t("correction.editAs")} className="correction-tabs">
        <button {...tab("form")} disabled={fields.length === 0}>{t("correction.form")}</button>
        <button {...tab("json")}>{t("correction.json")}</button>
      </div>
      {mode === "form" ? (
        <div id={`${ids}-panel-form`} role="tabpanel" aria-labelledby={`${ids}-tab-form`} className="correction-fields">
          {errorCount > 0 && <p className="alert error" role="alert">{t("correction.error.summary", { count: errorCount })}</p>}
          {fields.map((f) => (
            <FieldInput key={f.name} id={`${ids}-f-${f.name}`} field={f} value={values[f.name] ?? ""} error={errors[f.name]}
              disabled={disabled} onChange={(v) => {
                setValues((old) => ({ ...old, [f.name]: v }));
                setErrors(({ [f.name]: _fixed, ...rest }) => rest); // the person is fixing it: say so again only on submit
              }} />
          ))}
        </div>
      ) : (
        <div id={`${ids}-panel-json`} role="tabpanel" aria-labelledby={`${ids}-tab-json`} className="correction-json">
          <label htmlFor={`${ids}-json`}>{t("correction.jsonLabel")}</label>
          <textarea id={`${ids}-json`} rows={8} spellCheck={false} value={json} disabled={disabled}
            aria-invalid={jsonError ? true : undefined} aria-describedby={jsonError ? `${ids}-json-error` : undefined}
            onChange={(e) => setJson(e.target.value)} />
          {jsonError && <p id={`${ids}-json-error`} className="field-error" role="alert">{jsonError}</p>}
        </div>
      )}
      {approval.redacted.length > 0 && <p className="correction-hidden-note">{t("correction.hiddenNote", { placeholder: REDACTED })}</p>}
      <div className="correction-actions">
        <button type="submit" className="danger" disabled={disabled}>{t("correction.submit")}</button>
        <button type="button" onClick={onCancel} disabled={disabled}>{t("correction.cancel")}</button>
      </div>
    </form>
  );
}

function FieldInput({ id, field, value, error, disabled, onChange }: {
  id: string; field: Field; value: string; error?: FieldError; disabled: boolean; onChange(v: string): void;
}) {
  const { t } = useTranslation("chat");
  const describedBy = [field.description ? `${id}-desc` : "", field.hidden ? `${id}-hidden` : "", error ? `${id}-error` : ""]
    .filter(Boolean).join(" ") || undefined;
  const common = { id, disabled, "aria-invalid": error ? true : undefined, "aria-describedby": describedBy, "aria-required": field.required || undefined };
  const keepHidden = field.hidden && value === REDACTED;
  let input: React.ReactNode;
  if (field.kind === "boolean" && !keepHidden) {
    input = <input {...common} type="checkbox" checked={value === "true"} onChange={(e) => onChange(String(e.target.checked))} />;
  } else if (field.kind === "enum" && !keepHidden) {
    input = (
      <select {...common} value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">{t("correction.notSet")}</option>
        {(field.options ?? []).map((o) => <option key={JSON.stringify(o)} value={JSON.stringify(o)}>{String(o)}</option>)}
      </select>
    );
  } else if (field.kind === "json" && !keepHidden) {
    input = <textarea {...common} rows={3} spellCheck={false} value={value} onChange={(e) => onChange(e.target.value)} />;
  } else {
    const numeric = (field.kind === "number" || field.kind === "integer") && !keepHidden;
    input = <input {...common} type="text" inputMode={numeric ? "decimal" : undefined} value={value} onChange={(e) => onChange(e.target.value)} />;
  }
  return (
    <div className={`correction-field kind-${field.kind}${error ? " has-error" : ""}`}>
      <label htmlFor={id}>
        <code>{field.name}</code>
        {field.required && <span className="required-mark"> {t("correction.required")}</span>}
        {field.kind === "json" && <span className="muted"> {t("correction.asJson")}</span>}
      </label>
      {input}
      {field.description && <span id={`${id}-desc`} className="option-hint">{field.description}</span>}
      {field.hidden && <span id={`${id}-hidden`} className="option-hint">{t("correction.keepHidden", { placeholder: REDACTED })}</span>}
      {error && <span id={`${id}-error`} className="field-error">{t(`correction.error.${error}`)}</span>}
    </div>
  );
}
