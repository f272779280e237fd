// The inline form that adds an MCP server or edits one. Header values are
// secrets: the API only ever shows them masked, so an existing header's value
// field starts empty ("leave empty to keep") and only changed headers are sent.
import { useEffect, useId, useRef, useState } from "react";
import { ApiError, api } from "../api/client";
import type { NewServer, Server, ServerPatch } from "../api/types";
import { errorMessage } from "./policy";

export interface HeaderRow {
  key: string;
  /** The header's name as stored, for rows of existing headers. */
  existing?: string;
  /** The masked value the API showed, e.g. "********abcd". */
  masked?: string;
  name: string;
  value: string;
}

let rowSeq = 0;
const newRow = (): HeaderRow => ({ key: `h${++rowSeq}`, name: "", value: "" });

export function rowsFromHeaders(headers: Record<string, string>): HeaderRow[] {
  return Object.entries(headers)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, masked]) => ({ key: `h${++rowSeq}`, existing: name, masked, name, value: "" }));
}

/**
 * The PATCH `headers` for an edit: new or changed values, `null` for existing
 * headers whose rows were removed; undefined when nothing changed.
 */
export function headersPatch(existing: Record<string, string>, rows: HeaderRow[]): Record<string, string | null> | undefined {
  const out: Record<string, string | null> = {};
  const kept = new Set(rows.filter((r) => r.existing).map((r) => r.existing!.toLowerCase()));
  const setNames = new Set<string>();
  for (const r of rows) {
    const name = (r.existing ?? r.name).trim();
    if (!name || !r.value) continue;
    out[name] = r.value;
    setNames.add(name.toLowerCase());
  }
  for (const name of Object.keys(existing)) {
    const k = name.toLowerCase();
    // A new row with the same name replaces the header; no need to remove it.
    if (!kept.has(k) && !setNames.has(k)) out[name] = null;
  }
  return Object.keys(out).length ? out : undefined;
}

/** Problems the API would reject anyway, found before sending. */
export function checkRows(rows: HeaderRow[]): Record<string, string> {
  const errs: Record<string, string> = {};
  const seen = new Map<string, string>();
  for (const r of rows) {
    const name = (r.existing ?? r.name).trim();
    if (!r.existing) {
      if (!name && r.value) errs[`${r.key}.name`] = "Enter the header's name.";
      if (name && !r.value) errs[`${r.key}.value`] = "Enter the header's value.";
    }
    if (name) {
      const k = name.toLowerCase();
      if (seen.has(k)) errs[`${r.key}.name`] = `“${name}” is already set above (header names ignore case).`;
      else seen.set(k, r.key);
    }
  }
  return errs;
}

interface Props {
  /** The server to edit; absent to add one. */
  server?: Server;
  onSaved: (s: Server) => void;
  onCancel: () => void;
}

export function ServerForm({ server, onSaved, onCancel }: Props) {
  const id = useId();
  const editing = !!server;
  const [label, setLabel] = useState(server?.label ?? "");
  const [url, setUrl] = useState(server?.url ?? "");
  const [description, setDescription] = useState(server?.description ?? "");
  const [rows, setRows] = useState<HeaderRow[]>(() => (server ? rowsFromHeaders(server.headers) : []));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const formRef = useRef<HTMLFormElement>(null);
  const firstField = useRef<HTMLInputElement>(null);

  useEffect(() => {
    firstField.current?.focus();
  }, []);

  // After a failed submit, move focus to the first field with a problem.
  const focusFirstInvalid = () =>
    requestAnimationFrame(() => formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus());

  const updateRow = (key: string, patch: Partial<HeaderRow>) =>
    setRows((rs) => rs.map((r) => (r.key === key ? { ...r, ...patch } : r)));

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    if (busy) return;
    setFormError(null);
    const rowErrs = checkRows(rows);
    if (Object.keys(rowErrs).length) {
      setErrors(rowErrs);
      focusFirstInvalid();
      return;
    }
    setErrors({});
    setBusy(true);
    try {
      let saved: Server;
      if (server) {
        const patch: ServerPatch = {};
        if (url.trim() !== server.url) patch.url = url.trim();
        if (description !== server.description) patch.description = description;
        const h = headersPatch(server.headers, rows);
        if (h) patch.headers = h;
        saved = Object.keys(patch).length ? await api.updateServer(server.label, patch) : server;
      } else {
        const body: NewServer = { label: label.trim(), url: url.trim() };
        if (description) body.description = description;
        const headers: Record<string, string> = {};
        for (const r of rows) if (r.name.trim() && r.value) headers[r.name.trim()] = r.value;
        if (Object.keys(headers).length) body.headers = headers;
        saved = await api.createServer(body);
      }
      onSaved(saved);
    } catch (err) {
      setBusy(false);
      if (err instanceof ApiError) {
        const fe = fieldErrors(err, rows);
        setErrors(fe.byField);
        setFormError(fe.rest);
        if (Object.keys(fe.byField).length) focusFirstInvalid();
      } else {
        setFormError(errorMessage(err));
      }
    }
  };

  const field = (name: string) => ({
    "aria-invalid": errors[name] ? (true as const) : undefined,
    "aria-describedby": errors[name] ? `${id}-${name}-err` : undefined,
  });
  const errorFor = (name: string) =>
    errors[name] ? <p id={`${id}-${name}-err`} className="field-error">{errors[name]}</p> : null;

  return (
    <form
      ref={formRef}
      className="server-form"
      aria-label={editing ? `Edit server ${server!.label}` : "Add server"}
      onSubmit={submit}
      onKeyDown={(e) => {
        if (e.key === "Escape" && !busy) {
          e.preventDefault();
          onCancel();
        }
      }}
      noValidate
    >
      {!editing && <h3 className="form-title">Add an MCP server</h3>}
      {formError && <div className="alert error" role="alert">{formError}</div>}

      <div className="form-grid">
        <div className="form-field">
          <label htmlFor={`${id}-label`}>Label</label>
          {editing ? (
            <>
              <input id={`${id}-label`} value={label} readOnly aria-describedby={`${id}-label-hint`} className="readonly" />
              <p id={`${id}-label-hint`} className="field-hint">A server's label cannot change.</p>
            </>
          ) : (
            <>
              <input
                id={`${id}-label`}
                ref={firstField}
                value={label}
                onChange={(e) => setLabel(e.target.value)}
                autoComplete="off"
                spellCheck={false}
                placeholder="weather"
                {...field("label")}
                aria-describedby={[`${id}-label-hint`, errors.label && `${id}-label-err`].filter(Boolean).join(" ")}
              />
              <p id={`${id}-label-hint`} className="field-hint">Letters, digits, _ and -. The model sees it as the server's name.</p>
            </>
          )}
          {errorFor("label")}
        </div>

        <div className="form-field">
          <label htmlFor={`${id}-url`}>URL</label>
          <input
            id={`${id}-url`}
            ref={editing ? firstField : undefined}
            type="url"
            value={url}
            onChange={(e) => setUrl(e.target.value)}
            autoComplete="off"
            spellCheck={false}
            placeholder="https://mcp.example.com/mcp"
            {...field("url")}
          />
          {errorFor("url")}
        </div>

        <div className="form-field wide">
          <label htmlFor={`${id}-description`}>Description</label>
          <input
            id={`${id}-description`}
            value={description}
            onChange={(e) => setDescription(e.target.value)}
            placeholder="What the server is for (optional)"
            {...field("description")}
          />
          {errorFor("description")}
        </div>
      </div>

      <fieldset className="headers-fieldset" aria-describedby={`${id}-headers-hint`}>
        <legend>Headers</legend>
        <p id={`${id}-headers-hint`} className="field-hint">
          Sent to the MCP server with every request, e.g. <code>Authorization</code>. Values are stored as secrets and only shown masked.
          {editing && rows.some((r) => r.existing) && " Leave a value empty to keep it."}
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
                    <label htmlFor={`${id}-${nameKey}`}>Header name</label>
                    <input
                      id={`${id}-${nameKey}`}
                      value={r.name}
                      readOnly={!!r.existing}
                      className={r.existing ? "readonly" : undefined}
                      onChange={(e) => updateRow(r.key, { name: e.target.value })}
                      autoComplete="off"
                      spellCheck={false}
                      placeholder="Authorization"
                      {...field(nameKey)}
                    />
                    {errorFor(nameKey)}
                  </div>
                  <div className="form-field">
                    <label htmlFor={`${id}-${valueKey}`}>Header value</label>
                    <input
                      id={`${id}-${valueKey}`}
                      type="password"
                      value={r.value}
                      onChange={(e) => updateRow(r.key, { value: e.target.value })}
                      autoComplete="new-password"
                      spellCheck={false}
                      placeholder={r.existing ? `${r.masked ?? "********"} (unchanged)` : "Bearer …"}
                      {...field(valueKey)}
                    />
                    {errorFor(valueKey)}
                  </div>
                  <button
                    type="button"
                    className="remove-header"
                    aria-label={`Remove header ${(r.existing ?? r.name) || "(unnamed)"}`}
                    title="Remove header"
                    onClick={() => setRows((rs) => rs.filter((x) => x.key !== r.key))}
                  >
                    ×
                  </button>
                </li>
              );
            })}
          </ul>
        )}
        {editing && removedHeaders(server!.headers, rows).length > 0 && (
          <p className="field-hint removed-note">
            Will be removed: {removedHeaders(server!.headers, rows).map((n) => <code key={n}>{n}</code>).reduce<React.ReactNode[]>((acc, n, i) => (i ? [...acc, ", ", n] : [n]), [])}
          </p>
        )}
        <button type="button" className="link add-header" onClick={() => setRows((rs) => [...rs, newRow()])}>
          + Add header
        </button>
      </fieldset>

      <div className="form-actions">
        <button type="submit" className="primary" disabled={busy}>
          {busy ? (editing ? "Saving…" : "Adding and discovering tools…") : editing ? "Save changes" : "Add server"}
        </button>
        <button type="button" onClick={onCancel} disabled={busy}>Cancel</button>
        {editing && <span className="field-hint">Changing the URL or headers discovers the tools again.</span>}
      </div>
    </form>
  );
}

function removedHeaders(existing: Record<string, string>, rows: HeaderRow[]): string[] {
  const kept = new Set(rows.map((r) => (r.existing ?? r.name).trim().toLowerCase()));
  return Object.keys(existing).filter((n) => !kept.has(n.toLowerCase()));
}

/** Puts the API's `fields` next to the inputs they name; the rest goes on top. */
function fieldErrors(err: ApiError, rows: HeaderRow[]): { byField: Record<string, string>; rest: string | null } {
  const byField: Record<string, string> = {};
  const unplaced: string[] = [];
  for (const [k, msg] of Object.entries(err.fields)) {
    if (k === "label" || k === "url" || k === "description" || k === "headers") byField[k] = msg;
    else if (k.startsWith("headers.")) {
      const name = k.slice("headers.".length).toLowerCase();
      const row = rows.find((r) => (r.existing ?? r.name).trim().toLowerCase() === name);
      const aboutName = !row?.existing && /header name|twice|same header/i.test(msg);
      if (row) byField[`${row.key}.${aboutName ? "name" : "value"}`] = msg;
      else byField.headers = byField.headers ? `${byField.headers} ${msg}` : msg;
    } else unplaced.push(msg);
  }
  if (err.code === "duplicate_label" && !byField.label) byField.label = err.message;
  const placed = Object.keys(byField).length > 0;
  const rest = unplaced.length ? unplaced.join(" ") : placed ? null : err.message;
  return { byField, rest: placed && !unplaced.length ? null : rest };
}
