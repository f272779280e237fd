// Search and filter over a server's tools, and which tools "Ask for
// destructive tools" changes.
import type { Tool } from "../api/types";
import { isDestructive } from "./policy";

export type ToolFilter = "all" | "always" | "never" | "blocked" | "destructive";

export const TOOL_FILTERS: readonly ToolFilter[] = ["all", "always", "never", "blocked", "destructive"];

export function toolMatches(t: Tool, query: string, filter: ToolFilter): boolean {
  if (filter === "destructive" ? !isDestructive(t.annotations) : filter !== "all" && t.effective_policy !== filter) return false;
  const q = query.trim().toLowerCase();
  if (!q) return true;
  return [t.name, t.title ?? "", t.annotations?.title ?? "", t.description].some((s) => s.toLowerCase().includes(q));
}

/** The destructive tools "Ask for all destructive tools" changes: not already Ask, and never unblocks. */
export function destructiveTargets(tools: readonly Tool[]): Tool[] {
  return tools.filter((t) => isDestructive(t.annotations) && t.policy !== "always" && t.effective_policy !== "blocked");
}

/** The id of a tool's row (links and focus). */
export function rowId(server: string, tool: string): string {
  return `tool-${server}-${tool}`.replace(/[^A-Za-z0-9_-]/g, "_");
}
