// One policy choice as a group of native radio buttons, shown as a segmented
// control. Every choice is a save (audited, in force for the next tool call),
// so the control commits only what the person chose:
//
//   * click or tap: chooses that option;
//   * arrow keys (and Home / End): move the focus between the options and
//     choose nothing, so stepping from Use default to Blocked does not save
//     Auto and Ask on the way;
//   * Space or Enter: chooses the focused option.
//
// Each option keeps its radio role, name and checked state, so a screen
// reader says "Ask, radio button, not checked, 2 of 4" as the focus moves;
// the group's description says how to choose. (A <select> would not help:
// Chromium commits a closed select's change on every arrow key.)
//
// The value shown is the caller's (the query cache, optimistic while saving);
// the status line and the disabled state while saving come from the caller's
// mutation.
import { useEffect, useId, useRef, type KeyboardEvent } from "react";
import { useTranslation } from "react-i18next";
import type { DefaultPolicy, Policy } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { policyHint, policyLabel, POLICIES } from "./policy";
import type { SaveStatus } from "./queries";

export type Choice = Policy | null;

export interface PolicyControlProps<P extends DefaultPolicy = Policy> {
  /** The radiogroup's accessible name, e.g. "Policy for delete_forecast". */
  label: string;
  /** The choice shown; null means no explicit policy (the inherit option). */
  value: P | null;
  /** Saves a choice the person made (never called for the current one). */
  onChange: (next: P | null) => void;
  /** The save's state: disabled while saving, "Saved", or the API's sentence. */
  status: SaveStatus;
  /** The policies offered, in order (default: Auto, Ask, Blocked). */
  choices?: readonly P[];
  /** The fresh-install choice, marked "(default)". */
  recommended?: P;
  /** Options that cannot be chosen now (e.g. looser than a locked workspace policy), and why. */
  unavailable?: { choices: readonly (P | null)[]; why: string };
  /** The option meaning "no explicit policy", e.g. "Use default" with detail "(Ask, server default)". */
  inherit?: { label: string; detail?: string };
  disabled?: boolean;
}

const NEXT: Record<string, number> = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };

export function PolicyControl<P extends DefaultPolicy = Policy>(
  { label, value, onChange, status, inherit, disabled, choices, unavailable, recommended }: PolicyControlProps<P>,
) {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const id = useId();
  const groupRef = useRef<HTMLDivElement>(null);
  const hadFocus = useRef(false);
  const saving = status.kind === "saving";

  // Disabling the focused radio drops focus to <body>; put it back on the
  // checked radio when saving ends, so the keyboard keeps working.
  useEffect(() => {
    if (saving || !hadFocus.current) return;
    hadFocus.current = false;
    const active = document.activeElement;
    if (!active || active === document.body) {
      groupRef.current?.querySelector<HTMLInputElement>("input:checked")?.focus({ preventScroll: true });
    }
  }, [saving]);

  const options: { value: P | null; name: string; detail?: string; hint?: string }[] =
    (choices ?? (POLICIES as readonly DefaultPolicy[] as readonly P[])).map((p) => ({
      value: p, name: policyLabel(p, t), hint: policyHint(p, t), detail: p === recommended ? t("control.recommended") : undefined,
    }));
  if (inherit) options.push({ value: null, name: inherit.label, detail: inherit.detail });
  const isUnavailable = (v: P | null) => !!unavailable?.choices.includes(v) && v !== value;
  const off = disabled || saving;

  const choose = (next: P | null) => {
    if (off || next === value || isUnavailable(next)) return;
    hadFocus.current = !!groupRef.current?.contains(document.activeElement);
    onChange(next);
  };

  // Arrows move the focus only; Enter chooses (Space does, natively, by checking the radio).
  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>, at: number) => {
    const radios = [...(groupRef.current?.querySelectorAll<HTMLInputElement>("input[type=radio]") ?? [])];
    const step = NEXT[e.key];
    let to: number | undefined;
    if (step) {
      for (let i = 1; i < radios.length && to === undefined; i++) {
        const j = (at + step * i + radios.length) % radios.length;
        if (!radios[j].disabled) to = j;
      }
    } else if (e.key === "Home" || e.key === "End") {
      const enabled = radios.map((r, i) => (r.disabled ? -1 : i)).filter((i) => i >= 0);
      to = e.key === "Home" ? enabled[0] : enabled[enabled.length - 1];
    } else if (e.key === "Enter") {
      e.preventDefault();
      choose(options[at].value);
      return;
    } else return;
    e.preventDefault();
    if (to !== undefined) radios[to].focus();
  };

  const statusText =
    status.kind === "saving" ? t("control.saving") :
    status.kind === "saved" ? t("control.saved") :
    status.kind === "error" ? t("control.couldNotSave", { message: errorText(status.error) }) : "";

  return (
    <div className="policy-control">
      <div
        ref={groupRef}
        role="radiogroup"
        aria-label={label}
        aria-describedby={`${id}-keys`}
        aria-busy={saving || undefined}
        className="policy-options"
        data-value={value ?? "inherit"}
      >
        {options.map((o, i) => {
          const key = o.value ?? "inherit";
          const checked = value === o.value;
          const locked = isUnavailable(o.value);
          return (
            <label
              key={key}
              className={`policy-option opt-${key}${checked ? " checked" : ""}${locked ? " unavailable" : ""}`}
              title={locked ? unavailable?.why : o.hint}
            >
              <input
                type="radio"
                name={id}
                value={key}
                checked={checked}
                disabled={off || locked}
                aria-labelledby={`${id}-${i}`}
                aria-describedby={o.detail ? `${id}-${i}-d` : undefined}
                onChange={() => choose(o.value)}
                onKeyDown={(e) => onKeyDown(e, i)}
              />
              <span id={`${id}-${i}`} className="policy-option-name">{o.name}</span>
              {o.detail && <span id={`${id}-${i}-d`} className="policy-option-detail">{o.detail}</span>}
            </label>
          );
        })}
      </div>
      <span id={`${id}-keys`} className="sr-only">{t("control.keys")}</span>
      <span role="status" className={`policy-status ${status.kind}`}>{statusText}</span>
    </div>
  );
}
