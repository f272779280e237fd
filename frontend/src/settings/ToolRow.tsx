// One tool in the settings panel: what it is, the workspace policy (admins
// change it and can lock it; members see it), my own policy, and what applies
// to me in the end with the reason. Each control saves through its own
// mutation (optimistic in the query cache, see queries.ts).
import { useTranslation } from "react-i18next";
import { annotationBadges } from "../api/annotations";
import type { DefaultPolicy, Policy, Server, Tool } from "../api/types";
import { rowId } from "./filters";
import { LockIcon, LockToggle } from "./LockToggle";
import { PolicyControl } from "./PolicyControl";
import {
  asksBecausePhrase, hasNoHints, inheritedDetail, looser, policyLabel, POLICIES, sourceLabel, workspacePolicy, type SettingsT,
} from "./policy";
import { saveStatus, usePolicyMutation } from "./queries";
import { ApprovalCardDisclosure } from "./ApprovalCardEditor";
import { RulesDisclosure } from "./RuleEditor";
import { RelativeTime } from "./time";

export interface ToolRowProps {
  tool: Tool;
  server: Server;
  globalDefault: DefaultPolicy | undefined;
  admin: boolean;
  now: number;
  /** The tool the page's link names: marked, and focused once (then onFocused). */
  highlight: boolean;
  focus?: boolean;
  onFocused?: () => void;
}

/** The personal choices a lock (or an admin's block) rules out, and why; undefined when nothing is ruled out. */
export function personalLimits(tool: Tool, workspace: Policy | undefined, t: SettingsT): { choices: Policy[]; why: string } | undefined {
  if (!workspace) return undefined;
  const blocked = workspace === "blocked";
  if (!tool.locked && !blocked) return undefined;
  const choices = POLICIES.filter((p) => looser(p, workspace));
  if (!choices.length) return undefined;
  return {
    choices,
    why: blocked && !tool.locked ? t("tool.blockedForEveryone") : t("tool.lockedAt", { policy: policyLabel(workspace, t) }),
  };
}

/** "Effective for me: Ask · server default — asks because it is not read-only". */
export function EffectiveLine({ tool }: { tool: Tool }) {
  const { t } = useTranslation("settings");
  const phrase = asksBecausePhrase(tool.asks_because, tool.changed?.fields, t);
  return (
    <p className={`tool-effective eff-${tool.effective_policy}`}>
      {t("tool.effective")} <strong>{policyLabel(tool.effective_policy, t)}</strong>
      <span className="muted"> · {sourceLabel(tool.policy_source, t)}</span>
      {phrase && <span className="tool-why"> — {phrase}</span>}
    </p>
  );
}

function ToolInfo({ tool, now }: { tool: Tool; now: number }) {
  const { t } = useTranslation("settings");
  const badges = annotationBadges(tool.annotations, t);
  const title = tool.title ?? tool.annotations?.title;
  return (
    <div className="tool-info">
      <div className="tool-title-line">
        <h5 className="tool-name">{tool.name}</h5>
        {title && title !== tool.name && <span className="tool-title">{title}</span>}
        {badges.map((b) => <span key={b.key} className={`badge ${b.key}`} title={b.title}>{b.label}</span>)}
        {tool.discovered && hasNoHints(tool.annotations) && (
          <span className="badge" title={t("tool.noHintsTitle")}>{t("tool.noHints")}</span>
        )}
        {!tool.discovered && <span className="badge undiscovered-badge">{t("tool.notDiscovered")}</span>}
        {tool.locked && (
          <span className="badge locked-badge" title={t("tool.lockedTitle")}><LockIcon /> {t("tool.locked")}</span>
        )}
      </div>
      {tool.description && <p className="tool-desc">{tool.description}</p>}
      {!tool.discovered && <p className="tool-meta">{t("tool.undiscoveredNote")}</p>}
      {tool.policy && tool.policy_updated_at && (
        <p className="tool-meta">
          {tool.policy_updated_by
            ? t("tool.setBy", { policy: policyLabel(tool.policy, t), who: tool.policy_updated_by })
            : t("tool.set", { policy: policyLabel(tool.policy, t) })}{" "}
          <RelativeTime iso={tool.policy_updated_at} now={now} />
        </p>
      )}
      <EffectiveLine tool={tool} />
    </div>
  );
}

export function ToolRow({ tool, server, globalDefault, admin, now, highlight, focus, onFocused }: ToolRowProps) {
  const { t } = useTranslation("settings");
  const workspaceSave = usePolicyMutation(server.label, tool.name, "workspace");
  const lockSave = usePolicyMutation(server.label, tool.name, "workspace");
  const mineSave = usePolicyMutation(server.label, tool.name, "user");
  const workspace = workspacePolicy(tool, server.default_policy, globalDefault);
  const toolLocked = tool.policy !== null && tool.policy_locked;
  const limits = personalLimits(tool, workspace, t);
  const inherited = inheritedDetail(server.default_policy, globalDefault, tool.annotations, t);

  // The tool a link names: scroll to it and focus its policy, once.
  const focusRow = (el: HTMLLIElement | null) => {
    if (!el || !focus) return;
    el.scrollIntoView?.({ block: "center" });
    el.querySelector<HTMLInputElement>("input[type=radio]:checked")?.focus({ preventScroll: true });
    onFocused?.();
  };

  return (
    <li ref={focusRow} id={rowId(server.label, tool.name)}
      className={`tool-row${highlight ? " is-focused" : ""}${tool.discovered ? "" : " undiscovered"}`}>
      <ToolInfo tool={tool} now={now} />
      <div className="tool-layers">
        <div className="tool-layer">
          <span className="layer-name">{t("tool.workspace")}</span>
          {admin ? (
            <div className="default-controls">
              <PolicyControl
                label={t("tool.policyFor", { tool: tool.name })}
                value={tool.policy}
                inherit={{ label: t("tool.useDefault"), detail: inherited }}
                status={saveStatus(workspaceSave)}
                disabled={lockSave.isPending}
                onChange={(policy) => workspaceSave.mutate({ policy, locked: policy === null ? undefined : toolLocked })}
              />
              <LockToggle label={t("tool.lockFor", { tool: tool.name })} locked={toolLocked}
                status={saveStatus(lockSave)} disabled={!tool.policy || workspaceSave.isPending}
                disabledWhy={t("tool.lockWhyDisabled")}
                onChange={(locked) => tool.policy && lockSave.mutate({ policy: tool.policy, locked })} />
            </div>
          ) : (
            <div className="readonly-setting" role="group" aria-label={t("tool.workspacePolicyFor", { tool: tool.name })}>
              <strong>{policyLabel(workspace, t)}</strong>
              <span className="muted"> {tool.policy ? t("tool.setForThisTool") : inherited}</span>
              {tool.locked && <span className="lock-note"><LockIcon /> {t("tool.locked")}</span>}
            </div>
          )}
        </div>
        <div className="tool-layer">
          <span className="layer-name">{t("tool.mine")}</span>
          <PolicyControl
            label={t("tool.myPolicyFor", { tool: tool.name })}
            value={tool.user_policy ?? null}
            inherit={{ label: t("tool.useWorkspace"), detail: workspace ? t("tool.paren", { text: policyLabel(workspace, t) }) : undefined }}
            unavailable={limits}
            status={saveStatus(mineSave)}
            onChange={(policy) => mineSave.mutate({ policy })}
          />
        </div>
        {limits && <p className="lock-why small"><LockIcon /> {limits.why}</p>}
      </div>
      <div className="tool-rules">
        <RulesDisclosure list={{ server: server.label, tool: tool.name }} name={tool.name} admin={admin} schema={tool.input_schema} />
        {admin && <ApprovalCardDisclosure server={server.label} tool={tool.name} />}
      </div>
    </li>
  );
}
