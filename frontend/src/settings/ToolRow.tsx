// One tool in the settings panel: what it is, the workspace policy (admins
// change it and can lock it; members see it), my own policy, and what applies
// to me in the end with the reason.
import { useEffect, useRef } from "react";
import { ApiError, api } from "../api/client";
import { annotationBadges } from "../api/annotations";
import type { DefaultPolicy, Policy, Server, Tool } from "../api/types";
import { LockIcon, LockToggle } from "./LockToggle";
import { PolicyControl } from "./PolicyControl";
import {
  asksBecausePhrase, hasNoHints, inheritedDetail, looser, policyLabel, POLICIES, sourceLabel, workspacePolicy,
} from "./policy";
import { RelativeTime } from "./time";

export function rowId(server: string, tool: string): string {
  return `tool-${server}-${tool}`.replace(/[^A-Za-z0-9_-]/g, "_");
}

export interface ToolRowProps {
  tool: Tool;
  server: Server;
  globalDefault: DefaultPolicy | undefined;
  admin: boolean;
  now: number;
  highlight: boolean;
  claimFocus: (key: string) => boolean;
  onToolChanged: (t: Tool) => void;
  /** Loads the server's tools again (after a change whose answer is not the tool, or a refusal that says ours is stale). */
  reload?: () => Promise<void>;
}

const isTool = (v: unknown): v is Tool => !!v && typeof v === "object" && "effective_policy" in v;

/** The personal choices a lock (or an admin's block) rules out, and why; undefined when nothing is ruled out. */
export function personalLimits(tool: Tool, workspace: Policy | undefined): { choices: Policy[]; why: string } | undefined {
  if (!workspace) return undefined;
  const blocked = workspace === "blocked";
  if (!tool.locked && !blocked) return undefined;
  const choices = POLICIES.filter((p) => looser(p, workspace));
  if (!choices.length) return undefined;
  return {
    choices,
    why: blocked && !tool.locked
      ? "An admin blocked this tool for everyone."
      : `An admin locked this tool at ${policyLabel(workspace)}: your own policy can only be stricter.`,
  };
}

/** "Effective: Ask · server default — asks because it is not read-only". */
export function EffectiveLine({ tool }: { tool: Tool }) {
  const phrase = asksBecausePhrase(tool.asks_because, tool.changed?.fields);
  return (
    <p className={`tool-effective eff-${tool.effective_policy}`}>
      Effective for me: <strong>{policyLabel(tool.effective_policy)}</strong>
      <span className="muted"> · {sourceLabel(tool.policy_source)}</span>
      {phrase && <span className="tool-why"> — {phrase}</span>}
    </p>
  );
}

export function ToolRow({ tool, server, globalDefault, admin, now, highlight, claimFocus, onToolChanged, reload }: ToolRowProps) {
  const ref = useRef<HTMLLIElement>(null);
  const badges = annotationBadges(tool.annotations);
  const title = tool.title ?? tool.annotations?.title;
  const workspace = workspacePolicy(tool, server.default_policy, globalDefault);
  const toolLocked = tool.policy !== null && (tool.policy_locked ?? !!tool.locked);
  const limits = personalLimits(tool, workspace);

  useEffect(() => {
    if (!highlight || !claimFocus(`${server.label}/${tool.name}`)) return;
    const el = ref.current;
    if (!el) return;
    el.scrollIntoView?.({ block: "center" });
    el.querySelector<HTMLInputElement>("input[type=radio]:checked")?.focus({ preventScroll: true });
  }, [highlight]);

  const after = async (answer: unknown) => {
    if (isTool(answer)) onToolChanged(answer);
    else await reload?.().catch(() => undefined);
  };

  const saveWorkspace = async (next: Policy | null) => {
    await after(next === null
      ? await api.deletePolicy(server.label, tool.name, "workspace")
      : await api.setPolicy(server.label, tool.name, next, "workspace", toolLocked));
  };

  const lock = async (locked: boolean) => {
    if (!tool.policy) return;
    await after(await api.setPolicy(server.label, tool.name, tool.policy, "workspace", locked));
  };

  const saveMine = async (next: Policy | null) => {
    try {
      await after(next === null
        ? await api.deletePolicy(server.label, tool.name, "user")
        : await api.setPolicy(server.label, tool.name, next, "user"));
    } catch (err) {
      // Locked since this page loaded: show the lock as it is now.
      if (err instanceof ApiError && err.code === "policy_locked") void reload?.().catch(() => undefined);
      throw err;
    }
  };

  return (
    <li ref={ref} id={rowId(server.label, tool.name)} className={`tool-row${highlight ? " is-focused" : ""}${tool.discovered ? "" : " undiscovered"}`}>
      <div className="tool-info">
        <div className="tool-title-line">
          <h5 className="tool-name">{tool.name}</h5>
          {title && title !== tool.name && <span className="tool-title">{title}</span>}
          {badges.map((b) => (
            <span key={b.key} className={`badge ${b.key}`} title={b.title}>{b.label}</span>
          ))}
          {tool.discovered && hasNoHints(tool.annotations) && (
            <span className="badge" title="The server declared no hints; MCP then assumes a tool may be destructive and reach outside systems">no hints</span>
          )}
          {!tool.discovered && <span className="badge undiscovered-badge">not discovered</span>}
          {tool.locked && <span className="badge locked-badge" title="Personal policies cannot loosen the workspace setting"><LockIcon /> locked</span>}
        </div>
        {tool.description && <p className="tool-desc">{tool.description}</p>}
        {!tool.discovered && (
          <p className="tool-meta">A policy was set for this name before discovery listed it; it applies once the server lists the tool.</p>
        )}
        {tool.policy && tool.policy_updated_at && (
          <p className="tool-meta">
            Workspace set to {policyLabel(tool.policy)}{tool.policy_updated_by ? ` by ${tool.policy_updated_by}` : ""}{" "}
            <RelativeTime iso={tool.policy_updated_at} now={now} />
          </p>
        )}
        <EffectiveLine tool={tool} />
      </div>
      <div className="tool-layers">
        <div className="tool-layer">
          <span className="layer-name">Workspace</span>
          {admin ? (
            <div className="default-controls">
              <PolicyControl
                label={`Policy for ${tool.name}`}
                value={tool.policy}
                inherit={{ label: "Use default", detail: inheritedDetail(server.default_policy, globalDefault, tool.annotations) }}
                onChange={saveWorkspace}
              />
              <LockToggle label={`Lock the policy for ${tool.name}`} locked={toolLocked}
                disabled={!tool.policy} disabledWhy="Choose Auto, Ask or Blocked to lock it" onChange={lock} />
            </div>
          ) : (
            <div className="readonly-setting" role="group" aria-label={`Workspace policy for ${tool.name}`}>
              <strong>{policyLabel(workspace)}</strong>
              <span className="muted"> {tool.policy ? "(set for this tool)" : inheritedDetail(server.default_policy, globalDefault, tool.annotations)}</span>
              {tool.locked && <span className="lock-note"><LockIcon /> locked</span>}
            </div>
          )}
        </div>
        <div className="tool-layer">
          <span className="layer-name">Mine</span>
          <PolicyControl
            label={`My policy for ${tool.name}`}
            value={tool.user_policy ?? null}
            inherit={{ label: "Use workspace", detail: workspace ? `(${policyLabel(workspace)})` : undefined }}
            unavailable={limits}
            onChange={saveMine}
          />
        </div>
        {limits && <p className="lock-why small"><LockIcon /> {limits.why}</p>}
      </div>
    </li>
  );
}
