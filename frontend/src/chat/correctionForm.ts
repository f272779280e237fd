// The correction editor's model: the fields a form shows for a tool's
// arguments (from its inputSchema, else from the arguments themselves), and
// the conversions between the form's text and the arguments object. Pure,
// so that it is tested without rendering.
import { REDACTED } from "./JsonView";

export type FieldKind = "string" | "number" | "integer" | "boolean" | "enum" | "json";

export interface Field {
  name: string;
  kind: FieldKind;
  required: boolean;
  description?: string;
  /** enum: the allowed values. */
  options?: unknown[];
  /** The request hid this value: "[redacted]" in it means "keep what the model sent". */
  hidden: boolean;
}

/** The form's state: each field's text (boolean: "true"/"false"; enum: the option's JSON; "" for not set). */
export type FormValues = Record<string, string>;

type Schema = { type?: unknown; properties?: Record<string, Prop>; required?: unknown };
type Prop = { type?: unknown; enum?: unknown; description?: unknown };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function kindOfProp(p: Prop): FieldKind {
  if (Array.isArray(p.enum) && p.enum.length > 0) return "enum";
  const types = Array.isArray(p.type) ? p.type.filter((t) => t !== "null") : [p.type];
  const t = types.length === 1 ? types[0] : undefined;
  return t === "string" || t === "number" || t === "integer" || t === "boolean" ? t : "json";
}

function kindOfValue(v: unknown): FieldKind {
  if (typeof v === "string") return "string";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  if (typeof v === "boolean") return "boolean";
  return "json";
}

/**
 * The form's fields: the schema's properties in order, then any argument the
 * schema does not name (the model sent it; the person may keep or remove it).
 * Without a usable schema, one field per argument, typed by its value.
 */
export function fieldsFor(schema: unknown, args: unknown, redacted: readonly string[]): Field[] {
  const hidden = new Set(redacted);
  const values = isObject(args) ? args : {};
  const s = isObject(schema) ? (schema as Schema) : {};
  const props = isObject(s.properties) ? s.properties : {};
  const required = new Set(Array.isArray(s.required) ? s.required.filter((r): r is string => typeof r === "string") : []);
  const out: Field[] = [];
  for (const [name, p] of Object.entries(props)) {
    const prop = isObject(p) ? (p as Prop) : {};
    out.push({
      name, kind: kindOfProp(prop), required: required.has(name), hidden: hidden.has(name),
      description: typeof prop.description === "string" ? prop.description : undefined,
      options: Array.isArray(prop.enum) ? prop.enum : undefined,
    });
  }
  for (const [name, v] of Object.entries(values)) {
    if (!(name in props)) out.push({ name, kind: kindOfValue(v), required: false, hidden: hidden.has(name) });
  }
  return out;
}

/** The form's text for the arguments. */
export function valuesFrom(fields: Field[], args: unknown): FormValues {
  const values = isObject(args) ? args : {};
  const out: FormValues = {};
  for (const f of fields) {
    const v = values[f.name];
    if (v === undefined) out[f.name] = f.kind === "boolean" ? "" : "";
    else if (f.hidden && v === REDACTED) out[f.name] = REDACTED;
    else if (f.kind === "string" && typeof v === "string") out[f.name] = v;
    else if ((f.kind === "number" || f.kind === "integer") && typeof v === "number") out[f.name] = String(v);
    else if (f.kind === "boolean" && typeof v === "boolean") out[f.name] = String(v);
    else if (f.kind === "enum") out[f.name] = JSON.stringify(v);
    else out[f.name] = JSON.stringify(v, null, 2);
  }
  return out;
}

/** Why a field's text cannot be used: a key of the chat namespace's correction.error. */
export type FieldError = "required" | "number" | "integer" | "json";

/**
 * The arguments object the form says, or the problems by field. A field left
 * empty is left out (unless required); "[redacted]" in a hidden field is
 * sent as it is: the server keeps the model's value there.
 */
export function objectFrom(fields: Field[], values: FormValues): { value: Record<string, unknown> } | { errors: Record<string, FieldError> } {
  const value: Record<string, unknown> = {};
  const errors: Record<string, FieldError> = {};
  for (const f of fields) {
    const text = values[f.name] ?? "";
    if (text === "" || (f.kind === "json" && text.trim() === "")) {
      if (f.required) errors[f.name] = "required";
      continue;
    }
    if (f.hidden && text === REDACTED) {
      value[f.name] = REDACTED;
      continue;
    }
    switch (f.kind) {
      case "string":
        value[f.name] = text;
        break;
      case "number":
      case "integer": {
        const n = Number(text.trim());
        if (text.trim() === "" || !Number.isFinite(n)) errors[f.name] = "number";
        else if (f.kind === "integer" && !Number.isInteger(n)) errors[f.name] = "integer";
        else value[f.name] = n;
        break;
      }
      case "boolean":
        value[f.name] = text === "true";
        break;
      case "enum":
      case "json":
        try {
          value[f.name] = JSON.parse(text);
        } catch {
          errors[f.name] = "json";
        }
        break;
    }
  }
  return Object.keys(errors).length > 0 ? { errors } : { value };
}

/** "Paris", 3, {"a":1}: a value as the card shows it in one line. */
export function inline(v: unknown): string {
  return v === undefined ? "" : JSON.stringify(v);
}
