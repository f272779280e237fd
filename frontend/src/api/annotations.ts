// A tool's MCP annotations as the badges both the approval card and the
// settings panel show. They come from the MCP server: hints, not guarantees.
import type { Annotations } from "./types";

export interface Hint { key: "read-only" | "destructive" | "open-world"; label: string; title: string }

/** The badges a tool's annotations earn, in a fixed order. */
export function annotationBadges(a: Annotations | null | undefined): Hint[] {
  const out: Hint[] = [];
  if (!a) return out;
  if (a.readOnlyHint === true) out.push({ key: "read-only", label: "read-only", title: "The server says this tool does not change anything" });
  if (a.destructiveHint === true) out.push({ key: "destructive", label: "destructive", title: "The server says this tool may delete or overwrite data" });
  if (a.openWorldHint === true) out.push({ key: "open-world", label: "open-world", title: "The server says this tool reaches outside systems or people (web, email, …)" });
  return out;
}
