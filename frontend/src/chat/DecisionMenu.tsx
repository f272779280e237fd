// A split button with a menu (the WAI-ARIA menu button pattern): the main
// button does the common thing in one click, the ▾ button opens a menu of
// every choice. Keyboard: Enter, Space or ArrowDown opens the menu on its
// first item (ArrowUp on the last); ArrowUp/ArrowDown/Home/End move;
// Enter or Space picks; Escape closes and returns focus; Tab closes.
// The menu is placed by Floating UI: below the buttons when it fits in the
// transcript's visible part, else above (flip), kept inside it sideways
// (shift) and no taller than the room there (size), so it never opens under
// the composer or past the window's edge, on a phone or a desktop.
import { autoUpdate, flip, offset, shift, size, useFloating } from "@floating-ui/react-dom";
import { useEffect, useId, useRef, useState } from "react";

export interface MenuChoice {
  key: string;
  label: string;
  hint: string;
}

export interface DecisionMenuProps {
  /** The main button's text; clicking it picks the first choice. */
  label: string;
  /** The ▾ button's accessible name, e.g. "More approval choices": it must not contain the main label, which Playwright matches as a substring. */
  menuLabel: string;
  className: string;
  disabled: boolean;
  choices: MenuChoice[];
  onPick(key: string): void;
}

export function DecisionMenu({ label, menuLabel, className, disabled, choices, onPick }: DecisionMenuProps) {
  const id = useId();
  const [wanted, setOpen] = useState(false);
  const open = wanted && !disabled; // a card that became busy closes its menus
  const [active, setActive] = useState(0);
  const toggle = useRef<HTMLButtonElement>(null);
  const items = useRef<(HTMLButtonElement | null)[]>([]);
  const root = useRef<HTMLDivElement>(null);
  const [anchor, setAnchor] = useState<HTMLElement | null>(null);
  const [list, setList] = useState<HTMLElement | null>(null);
  const { floatingStyles } = useFloating({
    open,
    elements: { reference: anchor, floating: list },
    placement: "bottom-start",
    whileElementsMounted: autoUpdate,
    middleware: [
      offset(4),
      flip({ padding: 8 }),
      shift({ padding: 8 }),
      size({
        padding: 8,
        apply({ availableWidth, availableHeight, elements }) {
          elements.floating.style.maxWidth = `${Math.max(availableWidth, 160)}px`;
          elements.floating.style.maxHeight = `${Math.max(availableHeight, 120)}px`;
        },
      }),
    ],
  });

  useEffect(() => {
    if (open) items.current[active]?.focus({ preventScroll: true }); // placed in view by Floating UI, not by scrolling
  }, [open, active]);
  useEffect(() => {
    if (!open) return;
    const outside = (e: PointerEvent) => {
      if (!root.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener("pointerdown", outside);
    return () => document.removeEventListener("pointerdown", outside);
  }, [open]);

  const show = (at: number) => {
    if (disabled) return;
    setActive(at);
    setOpen(true);
  };
  const close = (focus: boolean) => {
    setOpen(false);
    if (focus) toggle.current?.focus();
  };
  const pick = (key: string) => {
    close(true);
    onPick(key);
  };
  const onToggleKey = (e: React.KeyboardEvent) => {
    if (e.key === "ArrowDown") { e.preventDefault(); show(0); }
    if (e.key === "ArrowUp") { e.preventDefault(); show(choices.length - 1); }
  };
  const onMenuKey = (e: React.KeyboardEvent) => {
    const n = choices.length;
    switch (e.key) {
      case "ArrowDown": e.preventDefault(); setActive((a) => (a + 1) % n); break;
      case "ArrowUp": e.preventDefault(); setActive((a) => (a - 1 + n) % n); break;
      case "Home": e.preventDefault(); setActive(0); break;
      case "End": e.preventDefault(); setActive(n - 1); break;
      case "Escape": e.preventDefault(); close(true); break;
      case "Tab": setOpen(false); break;
    }
  };

  return (
    <div className="decision-menu" ref={root}>
      <div className="split-button" ref={setAnchor}>
        <button type="button" className={className} disabled={disabled} onClick={() => onPick(choices[0].key)}>
          {label}
        </button>
        <button ref={toggle} type="button" className={`${className} split-toggle`} disabled={disabled}
          aria-label={menuLabel} aria-haspopup="menu" aria-expanded={open} aria-controls={open ? `${id}-menu` : undefined}
          onClick={() => (open ? close(false) : show(0))} onKeyDown={onToggleKey}>
          <svg aria-hidden="true" viewBox="0 0 16 16" width="12" height="12"><path fill="currentColor" d="M3.5 6 8 10.5 12.5 6h-9Z" /></svg>
        </button>
      </div>
      {open && (
        <div id={`${id}-menu`} ref={setList} style={floatingStyles} role="menu" tabIndex={-1} aria-label={menuLabel}
          className="decision-menu-list" onKeyDown={onMenuKey}>
          {choices.map((c, i) => (
            <button key={c.key} ref={(el) => { items.current[i] = el; }} type="button" role="menuitem"
              tabIndex={i === active ? 0 : -1}
              onClick={() => pick(c.key)} onMouseEnter={() => setActive(i)}>
              {/* The name is the whole text, hint included (axe: label-content-name-mismatch). */}
              <span className="menu-label">{c.label}</span>
              <span className="menu-hint">{c.hint}</span>
            </button>
          ))}
        </div>
      )}
    </div>
  );
}
