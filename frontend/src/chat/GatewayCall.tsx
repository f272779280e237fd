// What Toolgate's MCP face saw of one call (docs/openapi.yaml GatewayCall):
// the definition it was checked against, the arguments it ran with, its
// result (secrets already hidden by the server) and what allowed it, or why
// it was refused. Shown on a decided approval and on a call in the transcript.
import type { TFunction } from "i18next";
import type { ReactNode } from "react";
import { Trans, useTranslation } from "react-i18next";
import { isKnownRefusal } from "../api/refusals";
import type { GatewayCall, Refusal } from "../api/types";
import { JsonView, RedactedNote } from "./JsonView";

/** How many hex digits of a digest are shown; the whole one is in the title. */
const SHORT = 12;

/** A digest, shortened ("3f9a1c0b7e2d…"), the whole value in its title (a tooltip). */
export function Digest({ value }: { value: string }) {
  const { t } = useTranslation("chat");
  return <code className="digest" title={t("gate.digestTitle", { digest: value })}>{value.length > SHORT ? `${value.slice(0, SHORT)}…` : value}</code>;
}

/** The refusal as a sentence the person can act on: ours for a known code, else the server's. */
export function refusalText(t: TFunction<"chat">, r: Refusal | null | undefined): string {
  if (!r) return t("gate.refusal.unknown");
  return isKnownRefusal(r.code) ? t(`gate.refusal.${r.code}`) : r.message || r.code;
}

/** The one sentence: ran / running / failed / refused / not run, with the definition. */
export function gateSentence(call: GatewayCall): { key: string; tone: "ok" | "error" | "warn" } {
  switch (call.state) {
    case "running": return { key: "gate.running", tone: "ok" };
    case "done": return call.is_error ? { key: "gate.ranError", tone: "error" } : { key: "gate.ran", tone: "ok" };
    case "failed": return { key: "gate.failed", tone: "warn" };
    case "refused": return { key: "gate.refused", tone: "error" };
    case "not_run": return { key: "gate.notRun", tone: "warn" };
  }
}

/** The whole digest as text, where details open: for keyboards and screen readers, which do not get titles. */
export function DigestFull({ value }: { value: string }) {
  const { t } = useTranslation("chat");
  return <p className="muted gateway-digest">{t("gate.digestTitle", { digest: value })}</p>;
}

/** The text parts of an MCP result, or null when it has none (then it shows as JSON). */
function resultTexts(result: unknown): string | null {
  const content = result && typeof result === "object" ? (result as { content?: unknown }).content : undefined;
  if (!Array.isArray(content)) return null;
  const parts = content.map((c) => {
    const o = c && typeof c === "object" ? (c as { type?: unknown; text?: unknown }) : {};
    return typeof o.text === "string" ? o.text : `[${typeof o.type === "string" ? o.type : "?"}]`;
  });
  return parts.length ? parts.join("\n") : null;
}

/** The result the face stored: its text, or its JSON, and what was masked in it; "no result" when none came back. */
export function GatewayResult({ call }: { call: GatewayCall }) {
  const { t } = useTranslation("chat");
  if (call.result === null || call.result === undefined) return <p className="muted">{t("gate.noResult")}</p>;
  const text = resultTexts(call.result);
  return (
    <>
      {text !== null ? <pre className={`call-output${call.is_error ? " error" : ""}`}>{text}</pre> : <JsonView value={call.result} />}
      <MaskedNote masked={call.masked} />
    </>
  );
}

/**
 * How many secret-looking values the face masked in the result before the
 * model read it; nothing when it did not check (null). Zero is said too: the
 * person learns the result was checked and passed untouched.
 */
export function MaskedNote({ masked }: { masked: number | null | undefined }) {
  const { t } = useTranslation("chat");
  if (masked === null || masked === undefined) return null;
  return <p className={`muted gateway-masked${masked > 0 ? " has-masked" : ""}`}>{t("gate.masked", { count: masked })}</p>;
}

/**
 * The face's record, compactly: one sentence ("Ran through Toolgate against
 * definition 3f9a1c0b7e2d…" / "Refused: …" / "Not run: …"), what allowed it,
 * and, on demand, the arguments it ran with and its result.
 */
export function GatewayCallView({ call, allowedBy, details = true }: { call: GatewayCall; allowedBy?: ReactNode; details?: boolean }) {
  const { t } = useTranslation("chat");
  const { key, tone } = gateSentence(call);
  const refused = call.state === "refused";
  const ran = !refused && call.state !== "not_run";
  return (
    <div className={`gateway-call gateway-${call.state} tone-${tone}`} data-state={call.state}>
      <p className="gateway-line">
        <span className="gateway-icon" aria-hidden="true">{refused ? "⛔" : call.state === "not_run" ? "⊘" : "⇄"}</span>
        {refused
          ? <span className="gateway-sentence">{t(key, { sentence: refusalText(t, call.refusal) })}</span>
          : <span className="gateway-sentence"><Trans t={t} i18nKey={key} components={{ digest: <Digest value={call.definition_digest} /> }} /></span>}
        {!refused && allowedBy ? <>{"; "}<span className="gateway-allowed">{t("gate.allowedBy")} {allowedBy}</span></> : null}
      </p>
      {details && (
        <details className="gateway-details">
          <summary>{t(ran ? "gate.showDetails" : "gate.showArguments")}</summary>
          {ran && <h3>{t("gate.arguments")}</h3>}
          <JsonView value={call.arguments} redacted={call.redacted} />
          <RedactedNote redacted={call.redacted} />
          {ran && (
            <>
              <h3>{t("gate.result")}</h3>
              <GatewayResult call={call} />
            </>
          )}
          <DigestFull value={call.definition_digest} />
          {refused && call.refusal?.message && (
            <p className="muted gateway-refusal-message">{t("gate.refusalMessage", { message: call.refusal.message, code: call.refusal.code })}</p>
          )}
        </details>
      )}
    </div>
  );
}
