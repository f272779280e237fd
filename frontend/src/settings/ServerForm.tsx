// The inline form that adds an MCP server or edits one. Saving is a mutation
// (queries.ts) that puts the answer into the servers list; problems found
// before sending and the API's field errors show next to their fields.
import { useEffect, useId, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { useTranslation } from "react-i18next";
import { ApiError } from "../api/client";
import type { NewServer, Server, ServerPatch } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { HeaderEditor } from "./HeaderEditor";
import { checkRows, fieldErrors, headersPatch, newHeaders, rowsFromHeaders, type HeaderRow } from "./headers";
import { useCreateServer, useServerPatch } from "./serverMutations";

export { headersPatch, rowsFromHeaders } from "./headers";

interface Props {
  /** The server to edit; absent to add one. */
  server?: Server;
  onSaved: (s: Server) => void;
  onCancel: () => void;
}

export function ServerForm({ server, onSaved, onCancel }: Props) {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const id = useId();
  const editing = !!server;
  const create = useCreateServer();
  const patch = useServerPatch(server?.label ?? "", "form");
  const saving = editing ? patch : create;
  const [label, setLabel] = useState(server?.label ?? "");
  const [url, setUrl] = useState(server?.url ?? "");
  const [description, setDescription] = useState(server?.description ?? "");
  const [rows, setRows] = useState<HeaderRow[]>(() => (server ? rowsFromHeaders(server.headers) : []));
  const [ttl, setTtl] = useState(ttlMinutesText(server?.approval_ttl_seconds ?? null));
  const [checked, setChecked] = useState<Record<string, string>>({});
  // Adding only: once added, the server's section has the switch (MaskResults).
  const [mask, setMask] = useState(true);
  const formRef = useRef<HTMLFormElement>(null);
  const firstField = useRef<HTMLInputElement>(null);
  const busy = saving.isPending;

  useEffect(() => {
    firstField.current?.focus();
  }, []);

  // The API's refusal, placed next to the fields it names.
  const failed = saving.error;
  const apiErrors = failed instanceof ApiError ? fieldErrors(failed, rows) : failed ? { byField: {}, rest: errorText(failed) } : null;
  const errors: Record<string, string> = { ...checked, ...apiErrors?.byField };
  const formError = apiErrors?.rest ?? null;

  // After a failed submit, move focus to the first field with a problem.
  const focusFirstInvalid = () =>
    requestAnimationFrame(() => formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus());

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (busy) return;
    const rowErrs = checkRows(rows, t);
    const ttlSeconds = parseTtlMinutes(ttl);
    if (ttlSeconds === undefined) rowErrs.approval_ttl_seconds = t("form.approvalTtlInvalid");
    setChecked(rowErrs);
    if (Object.keys(rowErrs).length) {
      saving.reset();
      focusFirstInvalid();
      return;
    }
    const done = { onSuccess: onSaved, onError: focusFirstInvalid };
    if (server) {
      const p: ServerPatch = {};
      if (url.trim() !== server.url) p.url = url.trim();
      if (description !== server.description) p.description = description;
      if (ttlSeconds !== undefined && ttlSeconds !== server.approval_ttl_seconds) p.approval_ttl_seconds = ttlSeconds;
      const h = headersPatch(server.headers, rows);
      if (h) p.headers = h;
      if (Object.keys(p).length) patch.mutate(p, done);
      else onSaved(server);
    } else {
      const body: NewServer = { label: label.trim(), url: url.trim() };
      if (description) body.description = description;
      if (ttlSeconds !== null && ttlSeconds !== undefined) body.approval_ttl_seconds = ttlSeconds;
      const headers = newHeaders(rows);
      if (headers) body.headers = headers;
      if (!mask) body.mask_results = false;
      create.mutate(body, done);
    }
  };

  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === "Escape" && !busy) {
      e.preventDefault();
      onCancel();
    }
  };

  const field = (name: string) => ({
    "aria-invalid": errors[name] ? (true as const) : undefined,
    "aria-describedby": errors[name] ? `${id}-${name}-err` : undefined,
  });
  const errorFor = (name: string) =>
    errors[name] ? <p id={`${id}-${name}-err`} className="field-error">{errors[name]}</p> : null;

  return (
    <form ref={formRef} className="server-form" onSubmit={submit} noValidate
      aria-label={server ? t("form.editLabel", { label: server.label }) : t("form.addLabel")}>
      {!editing && <h3 className="form-title">{t("form.addTitle")}</h3>}
      {formError && <div className="alert error" role="alert">{formError}</div>}

      <div className="form-grid">
        <div className="form-field">
          <label htmlFor={`${id}-label`}>{t("form.label")}</label>
          {editing ? (
            <input id={`${id}-label`} value={label} readOnly aria-describedby={`${id}-label-hint`} className="readonly" onKeyDown={onKeyDown} />
          ) : (
            <input
              id={`${id}-label`}
              ref={firstField}
              value={label}
              onChange={(e) => setLabel(e.target.value)}
              onKeyDown={onKeyDown}
              autoComplete="off"
              spellCheck={false}
              placeholder="weather"
              {...field("label")}
              aria-describedby={[`${id}-label-hint`, errors.label && `${id}-label-err`].filter(Boolean).join(" ")}
            />
          )}
          <p id={`${id}-label-hint`} className="field-hint">{editing ? t("form.labelFixed") : t("form.labelHint")}</p>
          {errorFor("label")}
        </div>

        <div className="form-field">
          <label htmlFor={`${id}-url`}>{t("form.url")}</label>
          <input
            id={`${id}-url`}
            ref={editing ? firstField : undefined}
            type="url"
            value={url}
            onChange={(e) => setUrl(e.target.value)}
            onKeyDown={onKeyDown}
            autoComplete="off"
            spellCheck={false}
            placeholder="https://mcp.example.com/mcp"
            {...field("url")}
          />
          {errorFor("url")}
        </div>

        <div className="form-field wide">
          <label htmlFor={`${id}-description`}>{t("form.description")}</label>
          <input
            id={`${id}-description`}
            value={description}
            onChange={(e) => setDescription(e.target.value)}
            onKeyDown={onKeyDown}
            placeholder={t("form.descriptionPlaceholder")}
            {...field("description")}
          />
          {errorFor("description")}
        </div>

        <div className="form-field">
          <label htmlFor={`${id}-ttl`}>{t("form.approvalTtl")}</label>
          <input
            id={`${id}-ttl`}
            inputMode="decimal"
            value={ttl}
            onChange={(e) => setTtl(e.target.value)}
            onKeyDown={onKeyDown}
            autoComplete="off"
            placeholder={t("form.approvalTtlPlaceholder")}
            {...field("approval_ttl_seconds")}
            aria-describedby={[`${id}-ttl-hint`, errors.approval_ttl_seconds && `${id}-approval_ttl_seconds-err`].filter(Boolean).join(" ")}
          />
          <p id={`${id}-ttl-hint`} className="field-hint">{t("form.approvalTtlHint")}</p>
          {errorFor("approval_ttl_seconds")}
        </div>
        {!editing && (
          <div className="form-field wide">
            <label className="checkbox">
              <input type="checkbox" checked={mask} onChange={(e) => setMask(e.target.checked)} onKeyDown={onKeyDown}
                aria-describedby={`${id}-mask-hint`} />{" "}{t("mask.checkbox")}
            </label>
            <p id={`${id}-mask-hint`} className="field-hint">{t(mask ? "mask.onNote" : "mask.offNote")}</p>
          </div>
        )}
      </div>

      <HeaderEditor id={id} rows={rows} onRows={setRows} existing={server?.headers}
        field={field} errorFor={errorFor} onKeyDown={onKeyDown} />

      <div className="form-actions">
        <button type="submit" className="primary" disabled={busy}>
          {busy ? (editing ? t("form.saving") : t("form.adding")) : editing ? t("form.save") : t("form.add")}
        </button>
        <button type="button" onClick={onCancel} disabled={busy}>{t("form.cancel")}</button>
        {editing && <span className="field-hint">{t("form.rediscoverHint")}</span>}
      </div>
    </form>
  );
}

/** approval_ttl_seconds as the form shows it: minutes, empty for the workspace's APPROVAL_TTL. */
export function ttlMinutesText(seconds: number | null): string {
  return seconds === null ? "" : String(Math.round((seconds / 60) * 100) / 100);
}

/**
 * The form's minutes as approval_ttl_seconds: null for empty (APPROVAL_TTL),
 * 0 for never, 60..604800 seconds; undefined when it is none of these.
 */
export function parseTtlMinutes(text: string): number | null | undefined {
  const v = text.trim().replace(",", ".");
  if (v === "") return null;
  if (!/^\d+(\.\d+)?$/.test(v)) return undefined;
  const seconds = Math.round(Number(v) * 60);
  return seconds === 0 || (seconds >= 60 && seconds <= 604800) ? seconds : undefined;
}
