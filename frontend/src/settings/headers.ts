// The server form's headers: rows as the person edits them, what a PATCH
// sends for them, the problems found before sending, and where the API's
// field errors belong. Header values are secrets: the API only ever shows
// them masked, so an existing header's row starts with an empty value
// ("leave empty to keep") and only changed headers are sent.
import { ApiError } from "../api/client";
import type { SettingsT } from "./policy";

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
export const newRow = (): HeaderRow => ({ key: `h${++rowSeq}`, name: "", value: "" });

export function rowsFromHeaders(headers: Record<string, string>): HeaderRow[] {
  return Object.entries(headers)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, masked]) => ({ key: `h${++rowSeq}`, existing: name, masked, name, value: "" }));
}

const nameOf = (r: HeaderRow) => (r.existing ?? r.name).trim();

/**
 * The PATCH `headers` for an edit: new or changed values, `null` for existing
 * headers whose rows were removed; undefined when nothing changed.
 */
export function headersPatch(existing: Record<string, string>, rows: HeaderRow[]): Record<string, string | null> | undefined {
  const out: Record<string, string | null> = {};
  const kept = new Set(rows.filter((r) => r.existing).map((r) => r.existing!.toLowerCase()));
  const setNames = new Set<string>();
  for (const r of rows) {
    const name = nameOf(r);
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

/** The headers of a new server: the rows with a name and a value. */
export function newHeaders(rows: HeaderRow[]): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const r of rows) if (r.name.trim() && r.value) out[r.name.trim()] = r.value;
  return Object.keys(out).length ? out : undefined;
}

/** Problems the API would reject anyway, found before sending. */
export function checkRows(rows: HeaderRow[], t: SettingsT): Record<string, string> {
  const errs: Record<string, string> = {};
  const seen = new Set<string>();
  for (const r of rows) {
    const name = nameOf(r);
    if (!r.existing) {
      if (!name && r.value) errs[`${r.key}.name`] = t("form.headerNameMissing");
      if (name && !r.value) errs[`${r.key}.value`] = t("form.headerValueMissing");
    }
    if (name) {
      const k = name.toLowerCase();
      if (seen.has(k)) errs[`${r.key}.name`] = t("form.headerTwice", { name });
      else seen.add(k);
    }
  }
  return errs;
}

/** The existing headers whose rows were removed. */
export function removedHeaders(existing: Record<string, string>, rows: HeaderRow[]): string[] {
  const kept = new Set(rows.map((r) => nameOf(r).toLowerCase()));
  return Object.keys(existing).filter((n) => !kept.has(n.toLowerCase()));
}

/** Puts the API's `fields` next to the inputs they name; the rest goes on top. */
export function fieldErrors(err: ApiError, rows: HeaderRow[]): { byField: Record<string, string>; rest: string | null } {
  const byField: Record<string, string> = {};
  const unplaced: string[] = [];
  for (const [k, msg] of Object.entries(err.fields)) {
    if (k === "label" || k === "url" || k === "description" || k === "headers") byField[k] = msg;
    else if (k.startsWith("headers.")) {
      const name = k.slice("headers.".length).toLowerCase();
      const row = rows.find((r) => nameOf(r).toLowerCase() === name);
      const aboutName = !row?.existing && /header name|twice|same header/i.test(msg);
      if (row) byField[`${row.key}.${aboutName ? "name" : "value"}`] = msg;
      else byField.headers = byField.headers ? `${byField.headers} ${msg}` : msg;
    } else unplaced.push(msg);
  }
  if (err.code === "duplicate_label" && !byField.label) byField.label = err.message;
  const placed = Object.keys(byField).length > 0;
  if (unplaced.length) return { byField, rest: unplaced.join(" ") };
  return { byField, rest: placed ? null : err.message };
}
