// The admins' lock on a workspace setting: while locked, personal policies
// cannot loosen it. A checkbox saved at once, back to its old state with the
// server's sentence when saving fails.
import { useId } from "react";
import { useOptimisticChoice } from "./PolicyControl";

export function LockToggle({ label, locked, disabled, disabledWhy, onChange }: {
  /** Accessible name, e.g. "Lock the policy for delete_forecast". */
  label: string;
  locked: boolean;
  disabled?: boolean;
  /** Why it cannot be used now (e.g. nothing set to lock). */
  disabledWhy?: string;
  onChange(next: boolean): Promise<unknown>;
}) {
  const id = useId();
  const { shown, state, choose, saving } = useOptimisticChoice<boolean>(locked, onChange);
  return (
    <span className={`lock-toggle${shown ? " is-locked" : ""}`}>
      <input id={id} type="checkbox" checked={shown} disabled={disabled || saving}
        aria-label={label} title={disabled ? disabledWhy : undefined}
        onChange={(e) => void choose(e.target.checked)} />
      <label htmlFor={id} aria-hidden="true"><LockIcon open={!shown} /> {shown ? "Locked" : "Lock"}</label>
      <span role="status" className={`policy-status ${state.kind}`}>
        {state.kind === "error" ? `Could not save: ${state.message}` : state.kind === "saving" ? "Saving…" : ""}
      </span>
    </span>
  );
}

export function LockIcon({ open = false }: { open?: boolean }) {
  return (
    <svg aria-hidden="true" viewBox="0 0 16 16" width="12" height="12" className="lock-icon">
      <path fill="currentColor" d={open
        ? "M11 1a3 3 0 0 0-3 3v2H3.5A1.5 1.5 0 0 0 2 7.5v6A1.5 1.5 0 0 0 3.5 15h7a1.5 1.5 0 0 0 1.5-1.5v-6A1.5 1.5 0 0 0 10.5 6H9.5V4a1.5 1.5 0 0 1 3 0v1H14V4a3 3 0 0 0-3-3Z"
        : "M8 1a3.5 3.5 0 0 0-3.5 3.5V6h-1A1.5 1.5 0 0 0 2 7.5v6A1.5 1.5 0 0 0 3.5 15h9a1.5 1.5 0 0 0 1.5-1.5v-6A1.5 1.5 0 0 0 12.5 6h-1V4.5A3.5 3.5 0 0 0 8 1Zm-2 5V4.5a2 2 0 1 1 4 0V6H6Z"} />
    </svg>
  );
}
