// A server's default policy for its tools without one of their own, and the
// admins' lock on it; members see it read-only.
import { useTranslation } from "react-i18next";
import type { DefaultPolicy, Server } from "../api/types";
import { LockIcon, LockToggle } from "./LockToggle";
import { PolicyControl } from "./PolicyControl";
import { DEFAULT_POLICIES, policyLabel } from "./policy";
import { saveStatus } from "./queries";
import { useServerPatch } from "./serverMutations";

export function ServerDefault({ server, admin, globalDefault }: {
  server: Server;
  admin: boolean;
  globalDefault: DefaultPolicy | undefined;
}) {
  const { t } = useTranslation("settings");
  const label = server.label;
  const policy = useServerPatch(label, "default");
  const lock = useServerPatch(label, "lock");
  return (
    <div className="server-default">
      <div className="server-default-text">
        <span className="setting-name">{t("server.default")}</span>
        <span className="muted small">{t("server.defaultHint")}</span>
      </div>
      {admin ? (
        <div className="default-controls">
          <PolicyControl<DefaultPolicy>
            label={t("server.defaultFor", { label })}
            value={server.default_policy}
            choices={DEFAULT_POLICIES}
            inherit={{
              label: t("server.useGlobalDefault"),
              detail: globalDefault ? t("tool.paren", { text: policyLabel(globalDefault, t) }) : undefined,
            }}
            status={saveStatus(policy)}
            disabled={lock.isPending}
            onChange={(next) => policy.mutate({ default_policy: next })}
          />
          <LockToggle label={t("server.lockDefault", { label })} locked={server.default_policy_locked}
            status={saveStatus(lock)}
            disabled={(!server.default_policy && !server.default_policy_locked) || policy.isPending}
            disabledWhy={t("server.lockWhyDisabled")}
            onChange={(locked) => lock.mutate({ default_policy_locked: locked })} />
        </div>
      ) : (
        <p className="readonly-setting">
          <strong>{server.default_policy
            ? policyLabel(server.default_policy, t)
            : t("server.globalDefaultIs", { policy: policyLabel(globalDefault, t) })}</strong>
          {server.default_policy_locked && <span className="lock-note"><LockIcon /> {t("lockedByAdmin")}</span>}
        </p>
      )}
    </div>
  );
}
