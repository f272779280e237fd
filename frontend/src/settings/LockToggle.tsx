// The admins' lock on a workspace setting: while locked, personal policies
// cannot loosen it. A checkbox saved at once; the value shown is the caller's
// (optimistic in the query cache), the status its mutation's.
import { useId } from "react";
import { useTranslation } from "react-i18next";
import { useErrorText } from "../auth/errorText";
import type { SaveStatus } from "./queries";

export function LockToggle({ label, locked, status, disabled, disabledWhy, onChange }: {
  /** Accessible name, e.g. "Lock the policy for delete_forecast". */
  label: string;
  locked: boolean;
  status: SaveStatus;
  disabled?: boolean;
  /** Why it cannot be used now (e.g. nothing set to lock). */
  disabledWhy?: string;
  onChange(next: boolean): void;
}) {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const id = useId();
  const saving = status.kind === "saving";
  return (
    <span className={`lock-toggle${locked ? " is-locked" : ""}`}>
      <input id={id} type="checkbox" checked={locked} disabled={disabled || saving}
        aria-label={label} title={disabled ? disabledWhy : undefined}
        onChange={(e) => onChange(e.target.checked)} />
      <label htmlFor={id} aria-hidden="true"><LockIcon open={!locked} /> {locked ? t("lock.locked") : t("lock.lock")}</label>
      <span role="status" className={`policy-status ${status.kind}`}>
        {status.kind === "error" ? t("control.couldNotSave", { message: errorText(status.error) })
          : saving ? t("control.saving") : ""}
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
