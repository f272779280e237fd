// Pretty-printed JSON whose redacted values show as a "hidden" chip instead of
// the "[redacted]" placeholder Toolgate stored in their place.
import type { ReactNode } from "react";
import { useTranslation } from "react-i18next";
import { Escaped } from "./Escaped";

export const REDACTED = "[redacted]";

/** The path syntax of the API's `redacted` list: a.b, items[2].password. */
function childPath(parent: string, key: string | number): string {
  if (typeof key === "number") return `${parent}[${key}]`;
  return parent ? `${parent}.${key}` : key;
}

function LockIcon() {
  return (
    <svg className="lock-icon" aria-hidden="true" viewBox="0 0 16 16" width="11" height="11">
      <path fill="currentColor" d="M8 1a3.5 3.5 0 0 0-3.5 3.5V6H4a1 1 0 0 0-1 1v7a1 1 0 0 0 1 1h8a1 1 0 0 0 1-1V7a1 1 0 0 0-1-1h-.5V4.5A3.5 3.5 0 0 0 8 1Zm2 5H6V4.5a2 2 0 1 1 4 0V6Z" />
    </svg>
  );
}

function RedactedChip() {
  const { t } = useTranslation("chat");
  return (
    <span className="redacted-chip" title={t("json.hiddenTitle")}>
      <LockIcon />{t("json.hidden")}<span className="sr-only"> {t("json.hiddenSr")}</span>
    </span>
  );
}

function render(value: unknown, path: string, indent: string, hidden: ReadonlySet<string>): ReactNode {
  if (path && hidden.has(path) && value === REDACTED) return <RedactedChip />;
  if (value === null) return <span className="json-null">null</span>;
  // Hidden characters (bidi overrides, zero-width …) show as \uXXXX: what is
  // shown is what the tool gets (escape.ts).
  if (typeof value === "string") return <span className="json-string"><Escaped text={JSON.stringify(value)} /></span>;
  if (typeof value === "number" || typeof value === "boolean") return <span className="json-literal">{String(value)}</span>;
  const inner = indent + "  ";
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return (
      <>
        {"[\n"}
        {value.map((v, i) => (
          <span key={i}>
            {inner}
            {render(v, childPath(path, i), inner, hidden)}
            {i < value.length - 1 ? ",\n" : "\n"}
          </span>
        ))}
        {indent + "]"}
      </>
    );
  }
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return "{}";
    return (
      <>
        {"{\n"}
        {entries.map(([k, v], i) => (
          <span key={k}>
            {inner}
            <span className="json-key"><Escaped text={JSON.stringify(k)} /></span>
            {": "}
            {render(v, childPath(path, k), inner, hidden)}
            {i < entries.length - 1 ? ",\n" : "\n"}
          </span>
        ))}
        {indent + "}"}
      </>
    );
  }
  return String(value);
}

/** Arguments as pretty JSON; values at the `redacted` paths are shown as hidden. */
export function JsonView({ value, redacted, label }: { value: unknown; redacted?: string[] | null; label?: string }) {
  const hidden = new Set(redacted ?? []);
  return (
    <pre className="json-view" aria-label={label}>
      <code>{render(value, "", "", hidden)}</code>
    </pre>
  );
}

/** A sentence naming the argument paths Toolgate hid, or null when none. */
export function RedactedNote({ redacted }: { redacted?: string[] | null }) {
  const { t } = useTranslation("chat");
  if (!redacted || redacted.length === 0) return null;
  return (
    <p className="redacted-note">
      <LockIcon />
      {t("json.redactedBefore")}{" "}
      {redacted.map((p, i) => (
        <span key={p}>
          {i > 0 && ", "}
          <code>{p}</code>
        </span>
      ))}
      . {t("json.redactedAfter", { count: redacted.length })}
    </p>
  );
}
