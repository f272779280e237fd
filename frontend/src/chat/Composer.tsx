// The message box: write, send (Enter), stop the running response. The draft
// belongs to the conversation it was written in.
import { forwardRef, useImperativeHandle, useLayoutEffect, useRef } from "react";
import { useTranslation } from "react-i18next";
import { useScoped } from "./useScoped";

export interface ComposerHandle {
  /** Puts text in the box (a suggestion) and focuses it. */
  fill(text: string): void;
  focus(): void;
}

export interface ComposerProps {
  /** The conversation the draft belongs to. */
  scope: string | undefined;
  /** A response runs: nothing can be sent, it can be stopped. */
  busy: boolean;
  stopping: boolean;
  /** Approval requests waiting: a message now denies them. */
  pending: number;
  offline: boolean;
  /** Sends; on failure the text comes back, with the reason unless the person stopped it. */
  onSend(text: string): Promise<{ ok: true } | { ok: false; error?: string }>;
  onStop(): void;
}

export const Composer = forwardRef<ComposerHandle, ComposerProps>(function Composer(
  { scope, busy, stopping, pending, offline, onSend, onStop },
  ref,
) {
  const { t } = useTranslation("chat");
  const [draft, setDraft] = useScoped(scope, "");
  const [error, setError] = useScoped<string | null>(scope, null);
  const box = useRef<HTMLTextAreaElement>(null);

  useImperativeHandle(ref, () => ({
    fill: (text: string) => {
      setDraft(text);
      requestAnimationFrame(() => box.current?.focus());
    },
    focus: () => box.current?.focus(),
  }), [setDraft]);

  // The box grows with its text, up to a limit.
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    // Empty, it keeps its CSS height: Chrome measures the placeholder at the
    // wrong width (a 390 px window got a 118 px box for two lines).
    if (draft === "") { el.style.height = ""; return; }
    el.style.height = "auto";
    el.style.height = `${Math.min(el.scrollHeight + 2, 220)}px`;
  }, [draft]);

  const canSend = draft.trim() !== "" && !busy;
  const submit = async () => {
    if (!canSend) return;
    const text = draft;
    setDraft("");
    setError(null);
    const r = await onSend(text);
    if (!r.ok) {
      setError(r.error ?? null);
      setDraft((d) => d || text); // nothing was sent: give the text back
    }
  };

  return (
    <form className="composer" onSubmit={(e) => { e.preventDefault(); void submit(); }}>
      {pending > 0 && <p className="composer-note">{t("composer.pendingNote", { count: pending })}</p>}
      {error && <p className="alert error" role="alert">{error}</p>}
      <div className="composer-box">
        <textarea
          ref={box}
          aria-label={t("composer.label")}
          rows={1}
          value={draft}
          placeholder={offline ? t("composer.placeholderOffline") : t("composer.placeholder")}
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
              e.preventDefault();
              void submit();
            }
          }}
        />
        {busy && (
          <button type="button" className="stop" onClick={onStop} disabled={stopping}>
            <span className="stop-square" aria-hidden="true" />{t("composer.stop")}
          </button>
        )}
        <button type="submit" className="primary send" disabled={!canSend}>{t("composer.send")}</button>
      </div>
      <p className="composer-help">{t("composer.help")}</p>
    </form>
  );
});
