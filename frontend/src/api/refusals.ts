// The codes with which Toolgate's MCP face refuses a call (docs/openapi.yaml
// Refusal; internal/gateway/gate.go). The app says these in the person's
// language (chat: gate.refusal.*, settings: audit.refusal.*); a code it does
// not know shows the server's sentence.
export const REFUSAL_CODES = ["definition_changed", "blocked", "not_approved", "unknown_tool", "turn_over",
  "server_unavailable", "gate_unavailable"] as const;

export type RefusalCode = (typeof REFUSAL_CODES)[number];

export const isKnownRefusal = (code: unknown): code is RefusalCode =>
  typeof code === "string" && (REFUSAL_CODES as readonly string[]).includes(code);
