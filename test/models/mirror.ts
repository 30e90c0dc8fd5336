/**
 * A model mirror for the pull tests: a real `Bun.serve` on 127.0.0.1 (port 0) serving a folder,
 * honouring `Range`, logging every request, and able to drop a connection half-way through a file.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, normalize } from "node:path";
import { rangedResponse, serveLoopback } from "./file-server.ts";

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
  const server = serveLoopback((req) => {
    const path = decodeURIComponent(new URL(req.url).pathname);
    requests.push({ path, range: req.headers.get("range") });
    const file = normalize(join(root, path));
    if (!file.startsWith(root) || missing.has(path) || !existsSync(file) || !statSync(file).isFile()) {
      return new Response("not found", { status: 404, statusText: "Not Found" });
    }
    return rangedResponse(req, readFileSync(file), {
      cut: () => cutOnce.delete(path),
      stall: () => stallOnce.delete(path),
      who: "mirror",
    });
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
