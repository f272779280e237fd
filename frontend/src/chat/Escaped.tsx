// Text with its hidden characters shown as \uXXXX (escape.ts), each marked
// so it stands out from the text around it.
import { escapeHidden } from "./escape";

export function Escaped({ text }: { text: string }) {
  const parts = escapeHidden(text);
  if (parts.length === 1 && !parts[0].hidden) return <>{text}</>;
  return (
    <>
      {parts.map((p, i) => (p.hidden ? <mark key={i} className="hidden-char">{p.text}</mark> : <span key={i}>{p.text}</span>))}
    </>
  );
}
