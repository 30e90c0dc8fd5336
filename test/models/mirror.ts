/**
 * A model mirror for the pull tests: a real `Bun.serve` on 127.0.0.1 (port 0) serving a folder,
 * honouring `Range`, logging every request, and able to drop a connection half-way through a file.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, normalize } from "node:path";

export interface MirrorRequest {
  path: string;
  range: string | null;
}

export interface Mirror {
  url: string;
  requests: MirrorRequest[];
  /** URL paths whose next response stops after half the bytes (then the connection is dropped). */
  cutOnce: Set<string>;
  /** URL paths whose next response sends half the bytes and then nothing (connection left open). */
  stallOnce: Set<string>;
  /** URL paths answered 404 even when the file exists. */
  missing: Set<string>;
  stop(): Promise<void>;
}

export function startMirror(root: string): Mirror {
  const requests: MirrorRequest[] = [];
  const cutOnce = new Set<string>();
  const missing = new Set<string>();
  const stallOnce = new Set<string>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    // The dropped connection is the point of the test, not a server fault worth printing.
    error: () => new Response("error", { status: 500 }),
    fetch(req) {
      const path = decodeURIComponent(new URL(req.url).pathname);
      const range = req.headers.get("range");
      requests.push({ path, range });
      const file = normalize(join(root, path));
      if (!file.startsWith(root) || missing.has(path) || !existsSync(file) || !statSync(file).isFile()) {
        return new Response("not found", { status: 404, statusText: "Not Found" });
      }
      const data = readFileSync(file);
      let start = 0;
      if (range) {
        const m = range.match(/^bytes=(\d+)-$/);
        start = m ? Number(m[1]) : 0;
        if (start >= data.length) {
          return new Response(null, { status: 416, headers: { "content-range": `bytes */${data.length}` } });
        }
      }
      const headers: Record<string, string> = start > 0 ? { "content-range": `bytes ${start}-${data.length - 1}/${data.length}` } : {};
      const status = start > 0 ? 206 : 200;
      if (cutOnce.delete(path)) {
        const half = data.subarray(start, start + Math.floor((data.length - start) / 2));
        const body = new ReadableStream({
          start(c) {
            c.enqueue(half);
            setTimeout(() => c.error(new Error("mirror test: connection dropped")), 20);
          },
        });
        return new Response(body, { status, headers });
      }
      if (stallOnce.delete(path)) {
        const half = data.subarray(start, start + Math.floor((data.length - start) / 2));
        return new Response(new ReadableStream({ start: (c) => c.enqueue(half) }), { status, headers });
      }
      return new Response(data.subarray(start), { status, headers });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    cutOnce,
    stallOnce,
    missing,
    stop: async () => {
      await server.stop(true);
    },
  };
}
