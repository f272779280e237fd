// A disclosure: a button that opens and closes a panel next to it (the user
// menu, the chat's "Tools" control). While open, a mouse press outside the
// root or Escape closes it; Escape pressed inside it puts the focus back on
// the button. The button says whether the panel is open and which it is
// (aria-expanded, aria-controls).
import { useEffect, useId, useRef, useState } from "react";

export function useDisclosure() {
  const id = useId();
  const [open, setOpen] = useState(false);
  const root = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (!open) return;
    const onDown = (e: MouseEvent) => {
      if (!root.current?.contains(e.target as Node)) setOpen(false);
    };
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      setOpen(false);
      if (root.current?.contains(document.activeElement)) button.current?.focus();
    };
    document.addEventListener("mousedown", onDown);
    document.addEventListener("keydown", onKey);
    return () => {
      document.removeEventListener("mousedown", onDown);
      document.removeEventListener("keydown", onKey);
    };
  }, [open]);

  const panelId = `${id}-panel`;
  return {
    open,
    setOpen,
    /** For the element that holds the button and the panel: a press inside it does not close. */
    root,
    /** For the button: its ref and its ARIA state. */
    buttonProps: { ref: button, "aria-expanded": open, "aria-controls": panelId },
    /** For the panel. */
    panelProps: { id: panelId },
  };
}
