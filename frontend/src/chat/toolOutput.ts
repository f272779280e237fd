// Images in a tool's output. An MCP tool can return image content
// ({"type": "image", "data": "<base64>", "mimeType": "image/png"}); the
// provider relays a result with such content in mcp_call.output as JSON: the
// content list ([{"type":"text",…},{"type":"image",…}], as the emulator
// does), one content block, or the whole result ({"content": […]}). Such
// output is shown as its text, with the images as images, under rules that
// keep them inert:
// - only raster types a browser decodes as pictures, never SVG (which can
//   carry script and links) or anything else: PNG, JPEG, GIF, WebP;
// - the data must be base64 and start as its type says (the file signature);
// - at most MAX_IMAGE_BYTES decoded bytes each, else a note with the size;
// - shown as a data: URL in <img> (the app's CSP allows img-src data:), so
//   nothing is fetched from anywhere.

/** The largest image shown, in decoded bytes (1 MiB); a larger one is a note "image too large to show (N KB)". */
export const MAX_IMAGE_BYTES = 1024 * 1024;

/** The image types shown, with how their data starts. */
const SIGNATURES: Record<string, (b: Uint8Array) => boolean> = {
  "image/png": (b) => [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((v, i) => b[i] === v),
  "image/jpeg": (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  "image/gif": (b) => ascii(b, 0, 6) === "GIF87a" || ascii(b, 0, 6) === "GIF89a",
  "image/webp": (b) => ascii(b, 0, 4) === "RIFF" && ascii(b, 8, 12) === "WEBP",
};

const ascii = (b: Uint8Array, from: number, to: number) => String.fromCharCode(...b.slice(from, to));

export type OutputImage =
  | { kind: "shown"; mimeType: string; bytes: number; src: string }
  | { kind: "too_large"; mimeType: string; bytes: number }
  /** Not a type that is shown (SVG, …), or data that is not that type's. */
  | { kind: "not_shown"; mimeType: string; bytes: number };

export interface ToolOutput {
  /** The output as text: the text blocks of a content list (other non-image blocks as JSON), else the output itself. */
  text: string;
  images: OutputImage[];
}

type Block = { type: string; [k: string]: unknown };
const isBlock = (v: unknown): v is Block => !!v && typeof v === "object" && !Array.isArray(v) && typeof (v as Block).type === "string";

/** The content blocks output holds when it is MCP content with at least one image; null otherwise. */
function contentBlocks(output: string): Block[] | null {
  const s = output.trim();
  if (!(s.startsWith("[") || s.startsWith("{")) || !s.includes('"image"')) return null;
  let v: unknown;
  try { v = JSON.parse(s); } catch { return null; }
  const list = Array.isArray(v) ? v : isBlock(v) ? [v] : v && typeof v === "object" && Array.isArray((v as { content?: unknown }).content) ? (v as { content: unknown[] }).content : null;
  if (!list || !list.length || !list.every(isBlock)) return null;
  return list.some((b) => b.type === "image") ? list : null;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Decoded size of base64 text. */
const decodedBytes = (data: string) => Math.floor((data.length * 3) / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);

function image(b: Block): OutputImage {
  const data = typeof b.data === "string" ? b.data : "";
  let mimeType = typeof b.mimeType === "string" ? b.mimeType.trim().toLowerCase() : "";
  if (mimeType === "image/jpg") mimeType = "image/jpeg";
  const bytes = decodedBytes(data);
  const signature = SIGNATURES[mimeType];
  if (!signature || !data || data.length % 4 !== 0) return { kind: "not_shown", mimeType, bytes };
  if (bytes > MAX_IMAGE_BYTES) return { kind: "too_large", mimeType, bytes };
  let head: Uint8Array;
  try { head = Uint8Array.from(atob(data.slice(0, 16)), (c) => c.charCodeAt(0)); } catch { return { kind: "not_shown", mimeType, bytes }; }
  if (!BASE64.test(data) || !signature(head)) return { kind: "not_shown", mimeType, bytes };
  return { kind: "shown", mimeType, bytes, src: `data:${mimeType};base64,${data}` };
}

/** A tool's output: its text and, when it is MCP content with images, the images. */
export function toolOutput(output: string | null | undefined): ToolOutput {
  const blocks = output ? contentBlocks(output) : null;
  if (!blocks) return { text: output ?? "", images: [] };
  const text = blocks.filter((b) => b.type !== "image").map((b) => (b.type === "text" && typeof b.text === "string" ? b.text : JSON.stringify(b)));
  return { text: text.join("\n"), images: blocks.filter((b) => b.type === "image").map(image) };
}
