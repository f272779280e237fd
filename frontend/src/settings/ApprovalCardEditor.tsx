// A tool's approval card words and choices (admins): the text shown on its
// card above the arguments, with {placeholders} filled from the call's
// arguments (secrets stay hidden), and which choices the card offers.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { useTranslation } from "react-i18next";
import { api } from "../api/client";
import type { ApprovalCardSettings, ApprovalChoice } from "../api/types";
import { useErrorText } from "../auth/errorText";

const CHOICES: ApprovalChoice[] = ["approve_once", "approve_conversation", "approve_hour", "remember", "deny", "deny_with_correction"];
const MAX_TEXT = 500;

const cardsKey = (server: string) => ["approvalCards", server] as const;

/** The "Approval card" button of a tool, opening its editor. */
export function ApprovalCardDisclosure({ server, tool }: { server: string; tool: string }) {
  const { t } = useTranslation("settings");
  const [open, setOpen] = useState(false);
  const id = useId();
  return (
    <div className="card-disclosure">
      <button type="button" className="link" aria-expanded={open} aria-controls={id} onClick={() => setOpen(!open)}>
        {open ? t("approvalCard.hide") : t("approvalCard.show")}<span className="sr-only"> {t("approvalCard.forName", { name: tool })}</span>
      </button>
      {open && <div id={id}><ApprovalCardEditor server={server} tool={tool} /></div>}
    </div>
  );
}

/** The only ways to approve are grants, which a lock at Ask takes away (the card then offers Approve once instead). */
export const grantsOnly = (cs: readonly ApprovalChoice[]) =>
  !cs.includes("approve_once") && (cs.includes("approve_conversation") || cs.includes("approve_hour"));

export function ApprovalCardEditor({ server, tool }: { server: string; tool: string }) {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const qc = useQueryClient();
  const ids = useId();
  const cards = useQuery({ queryKey: cardsKey(server), queryFn: () => api.approvalCards(server) });
  const saved: ApprovalCardSettings | undefined = cards.data?.find((c) => c.tool_name === tool);
  const [text, setText] = useState<string | null>(null);
  const [choices, setChoices] = useState<ApprovalChoice[] | null>(null);
  const shownText = text ?? saved?.approval_text ?? "";
  const shownChoices = choices ?? saved?.choices ?? CHOICES;
  const done = () => { setText(null); setChoices(null); void qc.invalidateQueries({ queryKey: cardsKey(server) }); };
  const save = useMutation({
    mutationFn: () => api.putApprovalCard(server, tool, {
      approval_text: shownText.trim() ? shownText : null,
      choices: shownChoices.length === CHOICES.length ? null : CHOICES.filter((c) => shownChoices.includes(c)),
    }),
    onSuccess: done,
  });
  const reset = useMutation({ mutationFn: () => api.deleteApprovalCard(server, tool), onSuccess: done });

  if (cards.isPending) return <p className="muted small">{t("approvalCard.loading")}</p>;
  const toggle = (c: ApprovalChoice, on: boolean) => {
    save.reset();
    setChoices(on ? [...shownChoices, c] : shownChoices.filter((x) => x !== c));
  };
  const error = save.error ?? reset.error;
  return (
    <section className="approval-card-editor" aria-label={t("approvalCard.heading", { name: tool })}>
      <label htmlFor={`${ids}-text`}>{t("approvalCard.text")}</label>
      <textarea id={`${ids}-text`} rows={2} maxLength={MAX_TEXT} value={shownText} placeholder={t("approvalCard.textPlaceholder")}
        onChange={(e) => { save.reset(); setText(e.target.value); }} />
      <p className="muted small">{t("approvalCard.textHelp", { max: MAX_TEXT })}</p>
      <fieldset>
        <legend>{t("approvalCard.choices")}</legend>
        {CHOICES.map((c) => (
          <label key={c} className="checkbox">
            <input type="checkbox" checked={shownChoices.includes(c)} onChange={(e) => toggle(c, e.target.checked)} />
            {" "}{t(`approvalCard.choice.${c}`)}
          </label>
        ))}
      </fieldset>
      {grantsOnly(shownChoices) && <p className="muted small approval-card-lock-note">{t("approvalCard.grantsOnlyUnderLock")}</p>}
      {error && <p className="alert error" role="alert">{errorText(error)}</p>}
      <div className="row-actions">
        <button type="button" className="primary" disabled={save.isPending} onClick={() => save.mutate()}>{t("approvalCard.save")}</button>
        {saved && (
          <button type="button" disabled={reset.isPending} onClick={() => reset.mutate()}>{t("approvalCard.reset")}</button>
        )}
      </div>
    </section>
  );
}
