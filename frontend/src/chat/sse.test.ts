import { describe, expect, it } from "vitest";
import { parseSSE, toChatEvent, type RawEvent } from "../api/events";

/** A body that delivers exactly these chunks (strings are UTF-8 encoded, byte arrays as they are). */
function body(chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const ch of chunks) c.enqueue(typeof ch === "string" ? enc.encode(ch) : ch);
      c.close();
    },
  });
}

async function collect(chunks: (string | Uint8Array)[]): Promise<RawEvent[]> {
  const out: RawEvent[] = [];
  for await (const e of parseSSE(body(chunks))) out.push(e);
  return out;
}

const conversation = 'id: 1\nevent: conversation\ndata: {"conversation_id":"conv_1","turn_id":"turn_1","kind":"message","offline":true,"model":"m"}\n\n';

describe("parseSSE", () => {
  it("ignores comment lines (heartbeats) and yields each event with id, name and data", async () => {
    const evs = await collect([": ping\n\n", conversation, ": ping\n\n", 'id: 2\nevent: text.delta\ndata: {"item_id":"msg_1","response_id":"r","delta":"Hi"}\n\n']);
    expect(evs).toHaveLength(2);
    expect(evs[0]).toMatchObject({ id: "1", event: "conversation" });
    expect(JSON.parse(evs[0].data).conversation_id).toBe("conv_1");
    expect(evs[1]).toMatchObject({ id: "2", event: "text.delta" });
    expect(JSON.parse(evs[1].data).delta).toBe("Hi");
  });

  it("accepts CRLF and CR line ends", async () => {
    const evs = await collect([
      ": ping\r\n\r\nid: 1\r\nevent: completed\r\ndata: {\"sent\":true}\r\n\r\n",
      "id: 2\revent: error\rdata: {\"code\":\"x\"}\r\r",
    ]);
    expect(evs.map((e) => [e.id, e.event, e.data])).toEqual([
      ["1", "completed", '{"sent":true}'],
      ["2", "error", '{"code":"x"}'],
    ]);
  });

  it("reassembles lines split across chunks, including a CRLF split between its CR and LF", async () => {
    const evs = await collect(["id: 1\r", "\nev", "ent: text.del", "ta\r\ndata: {\"item_id\":\"m\",\"respo", "nse_id\":\"r\",\"delta\":\"ab\"}\r", "\n\r", "\n"]);
    expect(evs).toHaveLength(1);
    expect(evs[0].event).toBe("text.delta");
    expect(JSON.parse(evs[0].data)).toEqual({ item_id: "m", response_id: "r", delta: "ab" });
  });

  it("decodes multi-byte UTF-8 characters split between chunks", async () => {
    const bytes = new TextEncoder().encode('id: 3\nevent: text.delta\ndata: {"item_id":"m","response_id":"r","delta":"14°C ☔ 🌧"}\n\n');
    // Cut inside "°" (2 bytes), "☔" (3 bytes) and "🌧" (4 bytes).
    const deg = bytes.indexOf(0xc2) + 1;
    const umbrella = bytes.indexOf(0xe2) + 2;
    const cloud = bytes.indexOf(0xf0) + 3;
    const chunks = [bytes.slice(0, deg), bytes.slice(deg, umbrella), bytes.slice(umbrella, cloud), bytes.slice(cloud)];
    const evs = await collect(chunks);
    expect(JSON.parse(evs[0].data).delta).toBe("14°C ☔ 🌧");
  });

  it("one byte at a time gives the same events", async () => {
    const bytes = new TextEncoder().encode(conversation + ": ping\n\n" + 'id: 2\nevent: item.done\ndata: {"item":{"seq":1,"type":"user_message","created_at":"t","text":"Grüße"}}\n\n');
    const evs = await collect(Array.from(bytes, (b) => new Uint8Array([b])));
    expect(evs.map((e) => e.event)).toEqual(["conversation", "item.done"]);
    expect(JSON.parse(evs[1].data).item.text).toBe("Grüße");
  });

  it("joins several data lines with a newline", async () => {
    const evs = await collect(["event: x\ndata: a\ndata: b\n\n"]);
    expect(evs[0].data).toBe("a\nb");
  });

  it("does not yield an event that was not ended by a blank line", async () => {
    const evs = await collect([conversation, 'id: 2\nevent: completed\ndata: {"sent":true}\n']);
    expect(evs.map((e) => e.event)).toEqual(["conversation"]);
  });
});

describe("toChatEvent", () => {
  it("types known events and skips unknown names", async () => {
    const evs = await collect([
      conversation,
      'id: 2\nevent: response.reasoning\ndata: {"x":1}\n\n',
      'id: 3\nevent: completed\ndata: {"response_id":"r","pending_approvals":0,"pending_approval_ids":[],"sent":true}\n\n',
    ]);
    const typed = evs.map(toChatEvent);
    expect(typed[1]).toBeNull();
    expect(typed[0]).toMatchObject({ event: "conversation", id: 1, data: { conversation_id: "conv_1" } });
    expect(typed[2]).toMatchObject({ event: "completed", id: 3, data: { sent: true, pending_approvals: 0 } });
  });
});
