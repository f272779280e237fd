// A policy picker: native radios (so arrow keys move between options) shown
// as a segmented control. Each choice is saved at once through onChange; the
// control shows the choice optimistically, says "Saving…" / "Saved" in a
// status region, and goes back to the previous choice with the server's
// message when saving fails.
import { useEffect, useId, useRef, useState } from "react";
import type { DefaultPolicy, Policy } from "../api/types";
import { errorMessage, policyHint, policyLabel, POLICIES } from "./policy";

export type Choice = Policy | null;

export interface PolicyControlProps<P extends DefaultPolicy = Policy> {
  /** The radiogroup's accessible name, e.g. "Policy for delete_forecast". */
  label: string;
  /** The saved choice; null means no explicit policy (the inherit option). */
  value: P | null;
  /** Saves a choice; reject to roll back (the error's message is shown). */
  onChange: (next: P | null) => Promise<unknown>;
  /** The policies offered, in order (default: Auto, Ask, Blocked). */
  choices?: readonly P[];
  /** The fresh-install choice, marked "(default)". */
  recommended?: P;
  /** Options that cannot be chosen now (e.g. looser than a locked workspace policy), and why. */
  unavailable?: { choices: readonly (P | null)[]; why: string };
  /**
   * The option meaning "no explicit policy", e.g. "Use default" with detail
   * "(Ask, server default)". Leave out when a policy is required.
   */
  inherit?: { label: string; detail?: string };
  disabled?: boolean;
  className?: string;
}

type SaveState = { kind: "idle" } | { kind: "saving" } | { kind: "saved" } | { kind: "error"; message: string };

/** Optimistic saving with rollback, shared by every policy control. */
export function useOptimisticChoice<C>(value: C, save: (next: C) => Promise<unknown>) {
  const [shown, setShown] = useState<C>(value);
  const [state, setState] = useState<SaveState>({ kind: "idle" });
  const [synced, setSynced] = useState<C>(value);
  const alive = useRef(true);
  useEffect(() => {
    alive.current = true;
    return () => { alive.current = false; };
  }, []);

  // The saved value changed underneath (a reload, a bulk change): show it,
  // unless a save of ours is in flight.
  if (value !== synced && state.kind !== "saving") {
    setSynced(value);
    setShown(value);
  }

  const choose = async (next: C) => {
    if (state.kind === "saving" || next === shown) return;
    const previous = shown;
    setShown(next);
    setState({ kind: "saving" });
    try {
      await save(next);
      if (!alive.current) return;
      setState({ kind: "saved" });
    } catch (err) {
      if (!alive.current) return;
      setShown(previous);
      setState({ kind: "error", message: errorMessage(err) });
    }
  };

  return { shown, state, choose, saving: state.kind === "saving" };
}

export function PolicyControl<P extends DefaultPolicy = Policy>(
  { label, value, onChange, inherit, disabled, className, choices, unavailable, recommended }: PolicyControlProps<P>,
) {
  const id = useId();
  const { shown, state, choose, saving } = useOptimisticChoice<P | null>(value, onChange);
  const groupRef = useRef<HTMLDivElement>(null);
  const hadFocus = useRef(false);

  // Disabling the focused radio drops focus to <body>; put it back on the
  // checked radio when saving ends, so arrow keys keep working.
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
      value: p, name: policyLabel(p), hint: policyHint(p), detail: p === recommended ? "(default)" : undefined,
    }));
  if (inherit) options.push({ value: null, name: inherit.label, detail: inherit.detail });
  const isUnavailable = (v: P | null) => !!unavailable?.choices.includes(v) && v !== shown;

  const off = disabled || saving;
  const statusText =
    state.kind === "saving" ? "Saving…" :
    state.kind === "saved" ? "Saved" :
    state.kind === "error" ? `Could not save: ${state.message}` : "";

  return (
    <div className={["policy-control", className].filter(Boolean).join(" ")}>
      <div
        ref={groupRef}
        role="radiogroup"
        aria-label={label}
        aria-busy={saving || undefined}
        className="policy-options"
        data-value={shown ?? "inherit"}
      >
        {options.map((o, i) => {
          const key = o.value ?? "inherit";
          const checked = shown === o.value;
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
                onChange={() => {
                  hadFocus.current = !!groupRef.current?.contains(document.activeElement);
                  void choose(o.value);
                }}
              />
              <span id={`${id}-${i}`} className="policy-option-name">{o.name}</span>
              {o.detail && <span id={`${id}-${i}-d`} className="policy-option-detail">{o.detail}</span>}
            </label>
          );
        })}
      </div>
      <span role="status" className={`policy-status ${state.kind}`}>{statusText}</span>
    </div>
  );
}
