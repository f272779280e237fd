// What the card shows is what runs: characters that show as something else,
// or as nothing (bidirectional overrides, zero-width and other invisible
// characters, controls), are written out as \uXXXX so a person sees them.
// The same set as the server's policy.HiddenRune (internal/policy/limits.go),
// which refuses tool names holding any of them.

/**
 * C0 and C1 controls, format characters (Unicode category Cf: the bidi
 * embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069, the
 * marks U+200E, U+200F and U+061C, the zero-width U+200B–U+200D, U+2060 and
 * U+FEFF, the soft hyphen, tag characters …), line and paragraph separators
 * and invisible fillers. Variation selectors are not: emoji use them.
 */
const CATEGORIES = /^[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]$/u;

/** Whether the character ch (one code point) is hidden. */
export function isHidden(ch: string): boolean {
  if (CATEGORIES.test(ch)) return true;
  const cp = ch.codePointAt(0) ?? 0;
  // The combining grapheme joiner, the Hangul fillers, the Mongolian vowel separator.
  return cp === 0x034f || cp === 0x115f || cp === 0x1160 || cp === 0x180e || cp === 0x3164 || cp === 0xffa0;
}

/** Newline, carriage return and tab in an argument value are shown (as \n, \r, \t) and are no cause for a warning. */
const SHOWN = new Set(["\n", "\r", "\t"]);

export type Segment = { text: string; hidden: boolean };

/** The \uXXXX (or \u{XXXXX}) spelling of one character. */
export function escapeChar(ch: string): string {
  const cp = ch.codePointAt(0) ?? 0;
  const hex = cp.toString(16).toUpperCase();
  return cp > 0xffff ? `\\u{${hex}}` : `\\u${hex.padStart(4, "0")}`;
}

/** s cut into plain text and escaped hidden characters, in order. */
export function escapeHidden(s: string): Segment[] {
  const out: Segment[] = [];
  let plain = "";
  for (const ch of s) {
    if (!isHidden(ch)) {
      plain += ch;
      continue;
    }
    if (plain) out.push({ text: plain, hidden: false });
    plain = "";
    out.push({ text: escapeChar(ch), hidden: true });
  }
  if (plain || out.length === 0) out.push({ text: plain, hidden: false });
  return out;
}

/** s with every hidden character written as \uXXXX (for titles and labels). */
export function escapedText(s: string): string {
  return escapeHidden(s).map((p) => p.text).join("");
}

/** Whether s holds a hidden character other than newline, carriage return or tab. */
export function hasHidden(s: string): boolean {
  for (const ch of s) if (isHidden(ch) && !SHOWN.has(ch)) return true;
  return false;
}

/** Whether any key or string anywhere in value holds a hidden character (hasHidden). */
export function hasHiddenDeep(value: unknown, depth = 0): boolean {
  if (depth > 64) return false;
  if (typeof value === "string") return hasHidden(value);
  if (Array.isArray(value)) return value.some((v) => hasHiddenDeep(v, depth + 1));
  if (value && typeof value === "object") {
    return Object.entries(value as Record<string, unknown>).some(([k, v]) => hasHidden(k) || hasHiddenDeep(v, depth + 1));
  }
  return false;
}
