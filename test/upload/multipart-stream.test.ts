import { describe, expect, test } from "vitest";
import { boundaryOf, MultipartError, readMultipart } from "../../src/upload/multipart-stream.ts";

function streamOf(bytes: Uint8Array, chunk: number): ReadableStream<Uint8Array> {
  let off = 0;
  return new ReadableStream({
    pull(c) {
      if (off >= bytes.length) return c.close();
      c.enqueue(bytes.slice(off, off + chunk));
      off += chunk;
    },
  });
}

async function collect(body: Uint8Array, boundary: string, chunk: number) {
  const parts: { name: string; filename: string | null; data: Buffer }[] = [];
  let cur: Buffer[] = [];
  await readMultipart(streamOf(body, chunk), boundary, {
    onPartStart: (p) => {
      parts.push({ name: p.name, filename: p.filename, data: Buffer.alloc(0) });
      cur = [];
    },
    onPartData: (d) => void cur.push(Buffer.from(d)),
    onPartEnd: () => void (parts[parts.length - 1].data = Buffer.concat(cur)),
  });
  return parts;
}

describe("streaming multipart reader", () => {
  test("parses what a real FormData produces, whatever the chunk size", async () => {
    const payload = new Uint8Array(10_000).map((_, i) => (i * 31) % 256);
    // A payload that contains boundary-like text must survive intact.
    payload.set(new TextEncoder().encode("\r\n--not-the-boundary\r\n"), 5000);
    const fd = new FormData();
    fd.append("collection_id", "col_123");
    fd.append("file", new Blob([payload]), "clip.mp4");
    const req = new Request("http://x", { method: "POST", body: fd });
    const boundary = boundaryOf(req.headers.get("content-type"))!;
    const body = new Uint8Array(await req.arrayBuffer());
    for (const chunk of [1, 7, 64, 4096, body.length]) {
      const parts = await collect(body, boundary, chunk);
      expect(parts.map((p) => p.name)).toEqual(["collection_id", "file"]);
      expect(parts[0].data.toString()).toBe("col_123");
      expect(parts[1].filename).toBe("clip.mp4");
      expect(Buffer.compare(parts[1].data, Buffer.from(payload))).toBe(0);
    }
  });

  test("a body cut before the closing boundary is an error, not a silently short file", async () => {
    const fd = new FormData();
    fd.append("file", new Blob([new Uint8Array(1000)]), "a.mp4");
    const req = new Request("http://x", { method: "POST", body: fd });
    const boundary = boundaryOf(req.headers.get("content-type"))!;
    const body = new Uint8Array(await req.arrayBuffer()).slice(0, 600);
    await expect(collect(body, boundary, 100)).rejects.toBeInstanceOf(MultipartError);
  });

  test("boundary parsing", () => {
    expect(boundaryOf('multipart/form-data; boundary="abc def"')).toBe("abc def");
    expect(boundaryOf("multipart/form-data; charset=utf-8; boundary=xyz")).toBe("xyz");
    expect(boundaryOf("application/json")).toBeNull();
    expect(boundaryOf("multipart/form-data")).toBeNull();
  });
});
