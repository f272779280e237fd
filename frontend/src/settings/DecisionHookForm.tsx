// The decision hook of one MCP server (label) or of the workspace: an
// endpoint Toolgate asks, signed, before a card shows. Admins only. The
// signing secret is shown once, right after it was generated.
import { useQuery } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { useTranslation } from "react-i18next";
import { useErrorText } from "../auth/errorText";
import { decisionHookQuery, useDeleteHook, useSaveHook, useTestHook, type DecisionHook } from "./decisionHook";

export function DecisionHookForm({ label }: { label?: string }) {
  const { t } = useTranslation("settings");
  // Read when opened: a page of servers does not ask for every hook up front.
  const [open, setOpen] = useState(false);
  // Kept here: the editor starts afresh from each saved hook, the secret must outlive that.
  const [secret, setSecret] = useState<string | null>(null);
  const hook = useQuery({ ...decisionHookQuery(label), enabled: open });
  const title = label ? t("hook.serverHeading") : t("hook.workspaceHeading");
  const state = hook.data === undefined ? "" : hook.data === null ? t("hook.notSet")
    : hook.data.enabled ? t("hook.on", { url: hook.data.url }) : t("hook.off");
  return (
    <details className="decision-hook" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>{title}{state && <span className="muted"> · {state}</span>}</summary>
      <p className="muted small">{t("hook.intro")}</p>
      {hook.isError && <div className="alert error" role="alert">{t("hook.loadFailed")}</div>}
      {hook.data !== undefined && (
        <HookEditor key={hook.data?.updated_at ?? "new"} label={label} hook={hook.data} title={title} secret={secret} onSecret={setSecret} />
      )}
    </details>
  );
}

interface EditorProps {
  label?: string;
  hook: DecisionHook | null;
  title: string;
  /** The secret the last save generated, shown until the hook is removed. */
  secret: string | null;
  onSecret: (s: string | null) => void;
}

function HookEditor({ label, hook, title, secret, onSecret }: EditorProps) {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const id = useId();
  const save = useSaveHook(label);
  const remove = useDeleteHook(label);
  const test = useTestHook(label);
  const [url, setUrl] = useState(hook?.url ?? "");
  const [timeout, setTimeout] = useState(String(hook?.timeout_ms ?? 3000));
  const [enabled, setEnabled] = useState(hook?.enabled ?? true);
  const busy = save.isPending || remove.isPending || test.isPending;

  const submit = (e: FormEvent, rotate = false) => {
    e.preventDefault();
    test.reset();
    save.mutate({ url: url.trim(), timeout_ms: Number(timeout), enabled, ...(rotate ? { rotate_secret: true } : {}) },
      { onSuccess: (h) => onSecret(h.secret ?? null) });
  };
  const fieldError = (name: string) => (save.error && "fields" in save.error ? (save.error.fields as Record<string, string>)[name] : undefined);
  const answer = test.data;

  return (
    <form className="decision-hook-form" aria-label={title} onSubmit={submit} noValidate>
      <label htmlFor={`${id}-url`}>{t("hook.url")}</label>
      <input id={`${id}-url`} type="url" value={url} placeholder="https://hooks.example.com/toolgate" disabled={busy}
        aria-invalid={!!fieldError("url")} onChange={(e) => setUrl(e.target.value)} />
      <label htmlFor={`${id}-timeout`}>{t("hook.timeout")}</label>
      <input id={`${id}-timeout`} type="number" min={100} max={10000} step={100} value={timeout} disabled={busy}
        aria-invalid={!!fieldError("timeout_ms")} onChange={(e) => setTimeout(e.target.value)} />
      <label className="inline">
        <input type="checkbox" checked={enabled} disabled={busy} onChange={(e) => setEnabled(e.target.checked)} />
        {t("hook.enabled")}
      </label>
      {save.error && <div className="alert error" role="alert">{t("hook.saveFailed", { message: errorText(save.error) })}</div>}
      {remove.error && <div className="alert error" role="alert">{t("hook.deleteFailed", { message: errorText(remove.error) })}</div>}
      {secret && (
        <div className="alert info" role="status">
          {t("hook.secretOnce")} <code className="hook-secret">{secret}</code>
        </div>
      )}
      <div className="form-actions">
        <button type="submit" className="primary" disabled={busy}>{save.isPending ? t("hook.saving") : t("hook.save")}</button>
        {hook && (
          <>
            <button type="button" disabled={busy} onClick={() => test.mutate()}>{test.isPending ? t("hook.testing") : t("hook.test")}</button>
            <button type="button" disabled={busy} onClick={(e) => submit(e, true)}>{t("hook.rotate")}</button>
            <button type="button" className="danger" disabled={busy}
              onClick={() => remove.mutate(undefined, { onSuccess: () => onSecret(null) })}>
              {t("hook.remove")}
            </button>
          </>
        )}
      </div>
      {test.error && <div className="alert error" role="alert">{t("hook.testFailed", { message: errorText(test.error) })}</div>}
      {answer && (
        <p className={answer.error ? "status-error" : ""} role="status">
          {answer.error
            ? t("hook.answeredError", { error: answer.error, ms: answer.duration_ms })
            : t("hook.answered", { decision: t(`hook.decision.${answer.decision}`), status: answer.status, ms: answer.duration_ms })}
          {answer.reason && <> {t("hook.reason", { reason: answer.reason })}</>}
        </p>
      )}
    </form>
  );
}
