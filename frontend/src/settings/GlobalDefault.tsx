// The global default policy (for tools with no policy of their own on servers
// without a default) and the admins' lock on it; members see it read-only.
import { useTranslation } from "react-i18next";
import type { DefaultPolicy, Settings } from "../api/types";
import { LockIcon, LockToggle } from "./LockToggle";
import { PolicyControl } from "./PolicyControl";
import { DEFAULT_POLICIES, policyHint, policyLabel } from "./policy";
import { saveStatus } from "./queries";
import { useSettingsMutation } from "./serverMutations";

export function GlobalDefault({ settings, admin }: { settings: Settings; admin: boolean }) {
  const { t } = useTranslation("settings");
  const policy = useSettingsMutation("default");
  const lock = useSettingsMutation("lock");
  const askAll = useSettingsMutation("ask_everything");
  const now = settings.default_policy;
  return (
    <section className="global-default" aria-labelledby="global-default-h">
      <div className="global-default-text">
        <h2 id="global-default-h">{t("global.heading")}</h2>
        <p className="muted small">
          {t("global.hint", { policy: policyLabel(now, t), hint: policyHint(now, t) })}
        </p>
      </div>
      {admin ? (
        <div className="default-controls">
          <PolicyControl<DefaultPolicy> label={t("global.heading")} value={now} choices={DEFAULT_POLICIES}
            recommended="ask_unless_read_only" status={saveStatus(policy)} disabled={lock.isPending}
            onChange={(next) => next && policy.mutate({ default_policy: next })} />
          <LockToggle label={t("global.lock")} locked={settings.default_policy_locked} status={saveStatus(lock)}
            disabled={policy.isPending} onChange={(locked) => lock.mutate({ default_policy_locked: locked })} />
          <label className="ask-everything">
            <input type="checkbox" checked={settings.ask_everything} disabled={askAll.isPending}
              onChange={(e) => askAll.mutate({ ask_everything: e.target.checked })} />
            {t("global.askEverything")}
          </label>
        </div>
      ) : (
        <p className="readonly-setting">
          <strong>{policyLabel(now, t)}</strong>
          {settings.default_policy_locked && <span className="lock-note"><LockIcon /> {t("lockedByAdmin")}</span>}
        </p>
      )}
      {settings.ask_everything && <p className="ask-everything-on" role="status">{t("global.askEverythingOn")}</p>}
    </section>
  );
}
