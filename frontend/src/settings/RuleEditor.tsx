// Argument rules of one list (a tool's, a server's or the workspace's):
// shown behind a disclosure, edited as an ordered list by admins (add,
// remove, reorder, examples, Save) and read by everyone else. A rule the
// API refuses (on Save or Try it) shows its error at that rule, with CEL's
// line and column. The Try it panel (RuleTry) evaluates the rules as edited.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useRef, useState } from "react";
import { useTranslation } from "react-i18next";
import { api, type RuleListRef } from "../api/client";
import { keys } from "../api/query";
import type { Rule, RuleDecision } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { examples, ruleErrorOf, rulesQuery, type RuleError } from "./rules";
import { RuleTry } from "./RuleTry";

const DECISIONS: RuleDecision[] = ["approve", "deny", "ask"];

interface Props {
  list: RuleListRef;
  /** What the list is for, in labels: a tool's name, a server's label, or the workspace. */
  name: string;
  admin: boolean;
  /** The tool's input schema: examples and sample arguments use its names. */
  schema?: unknown;
}

/** The "Rules" button of a tool, server or the workspace, opening its rule editor. */
export function RulesDisclosure(props: Props) {
  const { t } = useTranslation("settings");
  const [open, setOpen] = useState(false);
  const id = useId();
  return (
    <div className="rules-disclosure">
      <button type="button" className="link rules-toggle" aria-expanded={open} aria-controls={id} onClick={() => setOpen(!open)}>
        {open ? t("rules.hide") : t("rules.show")}<span className="sr-only"> {t("rules.forName", { name: props.name })}</span>
      </button>
      {open && <div id={id}><RuleEditor {...props} /></div>}
    </div>
  );
}

type DraftRule = Rule & { key: number };

export function RuleEditor({ list, name, admin, schema }: Props) {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const qc = useQueryClient();
  const saved = useQuery(rulesQuery(list));
  const [draft, setDraft] = useState<DraftRule[] | null>(null);
  const [tryError, setTryError] = useState<RuleError>();
  const nextKey = useRef(10_000);
  const save = useMutation({
    mutationFn: (rs: Rule[]) => api.putRules(list, rs),
    onSuccess: (rs) => {
      qc.setQueryData(keys.rules(list.server, list.tool), rs);
      setDraft(null);
    },
  });
  const rows: DraftRule[] = draft ?? (saved.data ?? []).map((r, i) => ({ ...r, key: i }));
  const rules: Rule[] = rows.map(({ key: _key, ...r }) => r);
  const saveError = save.error ? ruleErrorOf(save.error) : undefined;
  const error = saveError ?? tryError;
  const headingId = useId();

  const edit = (fn: (rs: DraftRule[]) => DraftRule[]) => {
    save.reset();
    setTryError(undefined);
    setDraft(fn(rows));
  };
  const change = (i: number, patch: Partial<Rule>) => edit((rs) => rs.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const move = (i: number, by: number) => edit((rs) => {
    const out = [...rs];
    const [r] = out.splice(i, 1);
    out.splice(i + by, 0, r);
    return out;
  });
  const add = (r: Rule) => edit((rs) => [...rs, { ...r, key: nextKey.current++ }]);

  if (saved.isPending) return <p className="muted small">{t("rules.loading")}</p>;
  if (saved.isError) {
    return <div className="alert error" role="alert">{t("rules.loadFailed", { message: errorText(saved.error) })}</div>;
  }

  const listError = error && (error.index === undefined || error.index >= rows.length) ? error : undefined;
  return (
    <div className="rule-editor" role="group" aria-labelledby={headingId}>
      <h5 id={headingId} className="rule-editor-title">{t("rules.heading", { name })}</h5>
      <p className="muted small">{t(list.tool ? "rules.introTool" : list.server ? "rules.introServer" : "rules.introWorkspace")}</p>
      {rows.length === 0 && <p className="muted small">{t("rules.none")}</p>}
      {rows.length > 0 && (
        <ol className="rule-list" aria-label={t("rules.listLabel", { name })}>
          {rows.map((r, i) => (
            <RuleRow key={r.key} rule={r} n={i + 1} last={i === rows.length - 1} admin={admin}
              error={error?.index === i ? error : undefined}
              onChange={(p) => change(i, p)} onMove={(by) => move(i, by)}
              onRemove={() => edit((rs) => rs.filter((_, j) => j !== i))} />
          ))}
        </ol>
      )}
      {listError && <p className="rule-error" role="alert">{listError.message}</p>}
      {save.error && !saveError && <p className="rule-error" role="alert">{t("rules.saveFailed", { message: errorText(save.error) })}</p>}

      {admin && (
        <>
          <div className="rule-actions">
            <button type="button" onClick={() => add({ when: "", decision: "ask" })}>{t("rules.add")}</button>
            <button type="button" className="primary" disabled={!draft || save.isPending} onClick={() => save.mutate(rules)}>
              {save.isPending ? t("rules.saving") : t("rules.save")}
            </button>
            {draft && <button type="button" className="link" onClick={() => { save.reset(); setTryError(undefined); setDraft(null); }}>
              {t("rules.discard")}
            </button>}
            <span className="muted small" role="status">
              {draft ? t("rules.unsaved") : save.isSuccess ? t("rules.saved") : ""}
            </span>
          </div>
          <div className="rule-examples">
            <span className="muted small">{t("rules.examples")}</span>
            <ul>
              {examples(schema).map((ex) => (
                <li key={ex.when}>
                  <button type="button" className="link" onClick={() => add(ex)}>
                    <span className="sr-only">{t("rules.addExample")} </span>
                    <code>{ex.when}</code> → {t(`rules.decision.${ex.decision}`)}
                  </button>
                </li>
              ))}
            </ul>
          </div>
        </>
      )}
      {!admin && <p className="muted small">{t("rules.readOnly")}</p>}

      <RuleTry rules={rules} list={list} schema={schema} onRuleError={setTryError} />
    </div>
  );
}

interface RowProps {
  rule: Rule;
  n: number;
  last: boolean;
  admin: boolean;
  error?: RuleError;
  onChange: (p: Partial<Rule>) => void;
  onMove: (by: number) => void;
  onRemove: () => void;
}

function RuleRow({ rule, n, last, admin, error, onChange, onMove, onRemove }: RowProps) {
  const { t } = useTranslation("settings");
  const errId = useId();
  const decision = t(`rules.decision.${rule.decision}`);
  const errorLine = error && (
    <p id={errId} className="rule-error" role="alert">
      {error.line ? t("rules.errorAt", { n, line: error.line, column: error.column ?? 1 }) : t("rules.errorIn", { n })}{" "}
      {error.message}
    </p>
  );
  if (!admin) {
    return (
      <li className="rule-row readonly">
        <code>{rule.when}</code> → <strong>{decision}</strong>
        {rule.reason && <span className="muted"> — {rule.reason}</span>}
        {errorLine}
      </li>
    );
  }
  return (
    <li className={`rule-row${error ? " has-error" : ""}`}>
      <div className="rule-fields">
        <label className="rule-when">
          <span>{t("rules.when")}</span>
          <textarea rows={1} spellCheck={false} value={rule.when} aria-label={t("rules.whenLabel", { n })}
            aria-invalid={!!error} aria-describedby={error ? errId : undefined}
            placeholder='args.city in ["Test", "Sandbox"]' onChange={(e) => onChange({ when: e.target.value })} />
        </label>
        <label>
          <span>{t("rules.then")}</span>
          <select value={rule.decision} aria-label={t("rules.decisionLabel", { n })}
            onChange={(e) => onChange({ decision: e.target.value as RuleDecision })}>
            {DECISIONS.map((d) => <option key={d} value={d}>{t(`rules.decision.${d}`)}</option>)}
          </select>
        </label>
        <label className="rule-reason">
          <span>{t("rules.reason")}</span>
          <input value={rule.reason ?? ""} aria-label={t("rules.reasonLabel", { n })}
            onChange={(e) => onChange({ reason: e.target.value || undefined })} />
        </label>
        <div className="rule-move">
          <button type="button" disabled={n === 1} aria-label={t("rules.up", { n })} onClick={() => onMove(-1)}>↑</button>
          <button type="button" disabled={last} aria-label={t("rules.down", { n })} onClick={() => onMove(1)}>↓</button>
          <button type="button" className="danger" aria-label={t("rules.remove", { n })} onClick={onRemove}>✕</button>
        </div>
      </div>
      {errorLine}
    </li>
  );
}
