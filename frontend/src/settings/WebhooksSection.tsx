// Outbound webhooks (admins): the list, a form to add one, the secret shown
// once right after creating it (from the create call's answer, never the
// query cache), and per webhook: enable/disable, send a test, the delivery
// log and delete (asking first).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { useTranslation } from "react-i18next";
import { api } from "../api/client";
import { keys } from "../api/query";
import type { NewWebhook, Webhook, WebhookEvent } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { WebhookDeliveries } from "./WebhookDeliveries";
import "../account/account.css"; // the "shown once" box, shared with new tokens

const allEvents: WebhookEvent[] = ["approval.required", "decision.recorded"];
const eventKey = { "approval.required": "approvalRequired", "decision.recorded": "decisionRecorded" } as const;

function NewSecret({ hook, onDone }: { hook: NewWebhook; onDone(): void }) {
  const { t } = useTranslation("settings");
  const [copied, setCopied] = useState<"" | "copied" | "failed">("");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(hook.secret);
      setCopied("copied");
    } catch {
      setCopied("failed");
    }
  };
  return (
    <div className="new-token" role="region" aria-label={t("webhooks.secret.label")}>
      <p><strong>{t("webhooks.secret.warning")}</strong></p>
      <div className="new-token-value">
        <code aria-label={t("webhooks.secret.value")}>{hook.secret}</code>
        <button type="button" onClick={copy}>{t("webhooks.secret.copy")}</button>
        <span role="status">{copied && t(`webhooks.secret.${copied}`)}</span>
      </div>
      <p className="muted small">{t("webhooks.secret.usage")}</p>
      <button type="button" onClick={onDone}>{t("webhooks.secret.done")}</button>
    </div>
  );
}

function WebhookRow({ hook }: { hook: Webhook }) {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const client = useQueryClient();
  const [confirm, setConfirm] = useState(false);
  const [showLog, setShowLog] = useState(false);
  const refresh = () => client.invalidateQueries({ queryKey: keys.webhooks });
  const toggle = useMutation({ mutationFn: () => api.updateWebhook(hook.id, { enabled: !hook.enabled }), onSuccess: refresh });
  const remove = useMutation({ mutationFn: () => api.deleteWebhook(hook.id), onSuccess: refresh });
  const test = useMutation({
    mutationFn: () => api.testWebhook(hook.id),
    onSuccess: () => {
      setShowLog(true);
      return client.invalidateQueries({ queryKey: keys.webhookDeliveries(hook.id) });
    },
  });
  const error = toggle.error ?? remove.error ?? test.error;
  return (
    <li className="webhook card" aria-label={hook.url}>
      <div className="webhook-head">
        <code className="webhook-url">{hook.url}</code>
        <span className={`badge${hook.enabled ? "" : " muted"}`}>{hook.enabled ? t("webhooks.enabled") : t("webhooks.disabled")}</span>
      </div>
      <p className="muted small">{hook.events.join(", ")}{hook.description && ` — ${hook.description}`}</p>
      <div className="webhook-actions">
        <button type="button" disabled={toggle.isPending} onClick={() => toggle.mutate()}>
          {hook.enabled ? t("webhooks.disable") : t("webhooks.enable")}
        </button>
        <button type="button" disabled={test.isPending} onClick={() => test.mutate()}>{t("webhooks.test")}</button>
        <button type="button" aria-expanded={showLog} onClick={() => setShowLog((v) => !v)}>{t("webhooks.log")}</button>
        {confirm ? (
          <span role="group" aria-label={t("webhooks.delete.confirmLabel")} className="confirm-inline">
            <button type="button" className="danger solid" disabled={remove.isPending} onClick={() => remove.mutate()}>
              {t("webhooks.delete.confirm")}
            </button>{" "}
            <button type="button" onClick={() => setConfirm(false)}>{t("webhooks.delete.cancel")}</button>
          </span>
        ) : (
          <button type="button" className="danger" onClick={() => setConfirm(true)}>{t("webhooks.delete.button")}</button>
        )}
      </div>
      {test.isSuccess && <p className="muted small" role="status">{t("webhooks.testQueued")}</p>}
      {error && <p className="alert error" role="alert">{errorText(error)}</p>}
      {showLog && <WebhookDeliveries id={hook.id} />}
    </li>
  );
}

export function WebhooksSection() {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const id = useId();
  const client = useQueryClient();
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<WebhookEvent[]>(allEvents);
  const hooks = useQuery({ queryKey: keys.webhooks, queryFn: () => api.listWebhooks() });
  const create = useMutation({
    mutationFn: () => api.createWebhook({ url: url.trim(), events }),
    gcTime: 0, // the secret lives in this answer only
    onSuccess: () => {
      setUrl("");
      return client.invalidateQueries({ queryKey: keys.webhooks });
    },
  });
  const toggleEvent = (e: WebhookEvent) => setEvents((es) => (es.includes(e) ? es.filter((x) => x !== e) : [...es, e]));
  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    create.mutate();
  };

  return (
    <section className="webhooks" aria-labelledby={`${id}-h`}>
      <h2 id={`${id}-h`}>{t("webhooks.title")}</h2>
      <p className="muted">{t("webhooks.intro")}</p>
      <form className="card webhook-form" onSubmit={submit}>
        <label htmlFor={`${id}-url`}>{t("webhooks.url")}</label>
        <input id={`${id}-url`} type="url" value={url} placeholder="https://hooks.example.com/toolgate" onChange={(e) => setUrl(e.target.value)} />
        <fieldset>
          <legend>{t("webhooks.events")}</legend>
          {allEvents.map((ev) => (
            <label key={ev}>
              <input type="checkbox" checked={events.includes(ev)} onChange={() => toggleEvent(ev)} /> {t(`webhooks.event.${eventKey[ev]}`)} (<code>{ev}</code>)
            </label>
          ))}
        </fieldset>
        <button type="submit" className="primary" disabled={create.isPending || !url.trim() || events.length === 0}>
          {t("webhooks.add")}
        </button>
        {create.error && <p className="alert error" role="alert">{errorText(create.error)}</p>}
      </form>
      {create.data && <NewSecret hook={create.data} onDone={() => create.reset()} />}
      {hooks.isError && <p className="alert error" role="alert">{errorText(hooks.error)}</p>}
      {hooks.data?.length === 0 && <p className="muted">{t("webhooks.none")}</p>}
      <ul className="webhook-list">
        {hooks.data?.map((h) => <WebhookRow key={h.id} hook={h} />)}
      </ul>
    </section>
  );
}
