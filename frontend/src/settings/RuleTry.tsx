// "Try it": the rules as edited (saved or not) evaluated on sample arguments
// (POST /api/rules/test) and, for a tool, on its recent requests (POST
// .../rules/try): "would have approved 7 of the last 10", with the list.
// Nothing is saved. A rule the API refuses is handed to the editor to show.
import { useMutation } from "@tanstack/react-query";
import { useId, useState } from "react";
import { useTranslation } from "react-i18next";
import { api, type RuleListRef } from "../api/client";
import type { Rule, RuleTestResult, RuleTryCall } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { useFormat } from "../i18n/format";
import { ruleErrorOf, sampleArgs, type RuleError } from "./rules";
import type { SettingsT } from "./policy";

interface Props {
  rules: Rule[];
  list: RuleListRef;
  schema?: unknown;
  onRuleError: (e: RuleError | undefined) => void;
}

/** "Approve by rule 1", "Ask: no rule matched", "Ask: rule 2 could not be evaluated (…)". */
export function decisionText(r: Pick<RuleTestResult, "decision" | "rule_index" | "error">, t: SettingsT): string {
  const decision = t(`rules.decision.${r.decision}`);
  if (r.rule_index === null) return t("rules.noMatch", { decision });
  if (r.error) return t("rules.failed", { decision, n: r.rule_index + 1, error: r.error });
  return t("rules.byRule", { decision, n: r.rule_index + 1 });
}

export function RuleTry({ rules, list, schema, onRuleError }: Props) {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const sampleId = useId();
  const [sample, setSample] = useState(() => JSON.stringify(sampleArgs(schema), null, 2));
  const [sampleError, setSampleError] = useState<string>();
  const test = useMutation({
    mutationFn: (v: { rules: Rule[]; args: Record<string, unknown> }) =>
      api.testRules({ rules: v.rules, args: v.args, server: list.server, tool: list.tool }),
  });
  const tool = list.server !== undefined && list.tool !== undefined ? { server: list.server, tool: list.tool } : undefined;
  const recent = useMutation({
    mutationFn: (rs: Rule[]) => api.tryRules(tool!.server, tool!.tool, rs, 10),
  });
  // A refused rule is shown at the rule; any other failure here.
  const failure = (err: unknown) => (ruleErrorOf(err) ? undefined : errorText(err));
  const onError = (err: unknown) => onRuleError(ruleErrorOf(err));

  const run = () => {
    onRuleError(undefined);
    setSampleError(undefined);
    test.reset();
    let args: unknown;
    try {
      args = JSON.parse(sample || "{}");
    } catch (e) {
      setSampleError(t("rules.sampleNotJSON", { message: e instanceof Error ? e.message : String(e) }));
    }
    if (args !== undefined && (args === null || typeof args !== "object" || Array.isArray(args))) {
      setSampleError(t("rules.sampleNotObject"));
    } else if (args !== undefined) {
      test.mutate({ rules, args: args as Record<string, unknown> }, { onError });
    }
    if (tool) recent.mutate(rules, { onError });
  };

  const busy = test.isPending || recent.isPending;
  return (
    <div className="rule-try" role="group" aria-label={t("rules.tryLabel")}>
      <h6>{t("rules.tryHeading")}</h6>
      <label htmlFor={sampleId} className="small">{t("rules.sample")}</label>
      <textarea id={sampleId} className="rule-sample" rows={3} spellCheck={false} value={sample}
        aria-invalid={!!sampleError} onChange={(e) => setSample(e.target.value)} />
      <div className="rule-actions">
        <button type="button" onClick={run} disabled={busy}>{busy ? t("rules.trying") : t("rules.try")}</button>
      </div>
      {sampleError && <p className="rule-error" role="alert">{sampleError}</p>}
      <p className="rule-try-result" role="status">
        {test.data && <>{t("rules.onSample")} <strong>{decisionText(test.data, t)}</strong></>}
        {test.error && failure(test.error)}
      </p>
      {tool && <RecentResults data={recent.data} error={recent.error ? failure(recent.error) : undefined} />}
    </div>
  );
}

function RecentResults({ data, error }: { data?: { total: number; approved: number; denied: number; asked: number; results: RuleTryCall[] }; error?: string }) {
  const { t } = useTranslation("settings");
  const fmt = useFormat();
  return (
    <div className="rule-recent">
      <p role="status" className="rule-try-result">
        {error}
        {data && (data.total === 0 ? t("rules.recentNone") : (
          <>
            {t("rules.onRecent")}{" "}
            <strong>{t("rules.wouldApprove", { approved: data.approved, count: data.total })}</strong>{" "}
            <span className="muted">{t("rules.recentCounts", { denied: data.denied, asked: data.asked })}</span>
          </>
        ))}
      </p>
      {data && data.results.length > 0 && (
        <ul className="rule-recent-list" aria-label={t("rules.recentLabel")}>
          {data.results.map((r) => (
            <li key={r.approval_request_id} className={`rule-recent-item decided-${r.decision}`}>
              <span className="rule-recent-decision">{decisionText(r, t)}</span>{" "}
              <code>{JSON.stringify(r.arguments)}</code>{" "}
              <span className="muted small">
                {t("rules.recentMeta", { when: fmt.dateTime(r.requested_at), who: r.requested_by, state: t(`rules.state.${r.state}`, { defaultValue: r.state }) })}
              </span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
