/**
 * A Hugging Face hub for the pull tests, speaking its layout on two real loopback servers:
 *
 *  - the hub: `/{org}/{repo}/resolve/{revision}/{path}`. A `.onnx` file (git-lfs on the real hub)
 *    is a 302 to the CDN carrying `X-Linked-Etag: "<sha256>"`, `X-Linked-Size` and
 *    `X-Repo-Commit`; any other file is served by the hub itself with `ETag: "<git blob sha1>"`.
 *    An unknown repo, revision or file is 404.
 *  - the CDN (another origin): `/blobs/<sha256>?sig=…`, honouring `Range`, able to drop a
 *    connection half-way through a file or to serve corrupted bytes.
 *
 * Both log every request (method, path, range) so tests can check what a client did.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, normalize } from "node:path";
import { rangedResponse, serveLoopback } from "./file-server.ts";

export interface HubRequest {
  origin: "hub" | "cdn";
  method: string;
  path: string;
  range: string | null;
}

export interface FakeHub {
  /** The hub's address (what HF_ENDPOINT would be). */
  url: string;
  cdnUrl: string;
  requests: HubRequest[];
  /** Repo paths (`onnx/x.onnx`) whose next CDN response stops half-way and drops the connection. */
  cutOnce: Set<string>;
  /** Repo paths whose bytes are served with one byte flipped (the metadata stays right). */
  corrupt: Set<string>;
  /** Repo paths whose X-Linked-Etag / ETag announce another hash than the bytes have. */
  wrongEtag: Set<string>;
  stop(): Promise<void>;
}

export const COMMIT = "0123456789abcdef0123456789abcdef01234567";

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const gitSha1 = (b: Uint8Array) => createHash("sha1").update(`blob ${b.length}\0`).update(b).digest("hex");

/**
 * Serves `repos` (`"org/name@revision"` → a model folder). `renamed` maps an old `org/name` to its
 * new one: the hub answers a relative 307 to the same path under the new name, as the real hub does.
 */
export function startHub(repos: Record<string, string>, renamed: Record<string, string> = {}): FakeHub {
  const requests: HubRequest[] = [];
  const cutOnce = new Set<string>();
  const corrupt = new Set<string>();
  const wrongEtag = new Set<string>();
  /** sha256 → { repo path, bytes } for the CDN. */
  const blobs = new Map<string, { path: string; data: Uint8Array }>();

  const served = (path: string, data: Uint8Array): Uint8Array => {
    if (!corrupt.has(path)) return data;
    const copy = new Uint8Array(data);
    copy[Math.floor(copy.length / 2)] ^= 0xff;
    return copy;
  };

  const ranged = (req: Request, path: string, data: Uint8Array, extra: Record<string, string>): Response =>
    rangedResponse(req, data, {
      headers: { ...extra, "accept-ranges": "bytes" },
      cut: () => req.method === "GET" && cutOnce.delete(path),
      who: "hub",
    });

  const cdn = serveLoopback((req) => {
    const u = new URL(req.url);
    requests.push({ origin: "cdn", method: req.method, path: u.pathname, range: req.headers.get("range") });
    const m = u.pathname.match(/^\/blobs\/([0-9a-f]{64})$/);
    const blob = m ? blobs.get(m[1]) : undefined;
    if (!blob || u.searchParams.get("sig") !== "ok") return new Response("not found", { status: 404 });
    return ranged(req, blob.path, served(blob.path, blob.data), {});
  });

  const hub = serveLoopback((req) => {
    const u = new URL(req.url);
    const path = decodeURIComponent(u.pathname);
    requests.push({ origin: "hub", method: req.method, path, range: req.headers.get("range") });
    const m = path.match(/^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/);
    if (m && renamed[m[1]])
      return new Response(null, { status: 307, headers: { location: `/${renamed[m[1]]}/resolve/${m[2]}/${m[3]}` } });
    const root = m ? repos[`${m[1]}@${m[2]}`] : undefined;
    if (!m || !root)
      return new Response("Repository not found", { status: 404, headers: { "x-error-code": "RepoNotFound" } });
    const file = normalize(join(root, m[3]));
    if (!file.startsWith(root) || !existsSync(file) || !statSync(file).isFile()) {
      return new Response("Entry not found", { status: 404, headers: { "x-error-code": "EntryNotFound" } });
    }
    const data = new Uint8Array(readFileSync(file));
    const repoPath = m[3];
    if (repoPath.endsWith(".onnx")) {
      const sum = sha256(data);
      blobs.set(sum, { path: repoPath, data });
      const announced = wrongEtag.has(repoPath) ? sha256(new TextEncoder().encode(`not ${sum}`)) : sum;
      return new Response(null, {
        status: 302,
        headers: {
          location: `${cdnUrl}/blobs/${sum}?sig=ok`,
          "x-linked-etag": `"${announced}"`,
          "x-linked-size": String(data.length),
          "x-repo-commit": COMMIT,
          etag: `"${gitSha1(new TextEncoder().encode("pointer"))}"`,
        },
      });
    }
    const etag = wrongEtag.has(repoPath) ? gitSha1(new TextEncoder().encode("other")) : gitSha1(data);
    return ranged(req, repoPath, served(repoPath, data), { etag: `"${etag}"`, "x-repo-commit": COMMIT });
  });
  const cdnUrl = `http://127.0.0.1:${cdn.port}`;
  return {
    url: `http://127.0.0.1:${hub.port}`,
    cdnUrl,
    requests,
    cutOnce,
    corrupt,
    wrongEtag,
    stop: async () => {
      await hub.stop(true);
      await cdn.stop(true);
    },
  };
}
