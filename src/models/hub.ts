/**
 * The Hugging Face hub as a pull source, speaking its URL layout the way its own client
 * (huggingface_hub) does:
 *
 *   GET|HEAD {endpoint}/{repo}/resolve/{revision}/{path}
 *
 * `endpoint` is `HF_ENDPOINT` when set (a hub mirror such as a company proxy), else
 * https://huggingface.co. A file stored with git-lfs (the ONNX weights) is answered with a 302 to a
 * CDN on another host, and that 302 carries `X-Linked-Etag` (the sha256 of the content, quoted) and
 * `X-Linked-Size`; a plain git file (JSON, tokenizer) is answered 200 by the hub itself with
 * `ETag` = its git blob sha1. Like huggingface_hub, the metadata request is a HEAD that follows
 * redirects only within the hub's own origin (a renamed repository) and stops at the first
 * redirect to another origin: that target is where the bytes are, and the metadata is taken from
 * the response that pointed there.
 *
 * Outbound rules: the endpoint is operator configuration (a flag or an environment variable of an
 * operator command), never something a client of the API supplies, so the webhook/image_url
 * address rules do not apply; the one cross-origin hop allowed is the hub's own redirect to its CDN.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { AppError } from "../core/errors.ts";
import type { FetchImpl } from "./download.ts";
import { INTERRUPTED } from "./download.ts";

export const DEFAULT_HF_ENDPOINT = "https://huggingface.co";

export interface HubRef {
  repo: string;
  revision: string;
}

/** What the hub says about one file, and where to download it. */
export interface HubFileMeta {
  /** Where the bytes are: the CDN location of an LFS file, else the resolve URL. */
  url: string;
  /** sha256 of the content: `X-Linked-Etag` (LFS), or an `ETag` that is one. */
  sha256: string | null;
  /** git blob sha1 from `ETag` (plain git files): checked by hashing `blob <size>\0<bytes>`. */
  gitSha1: string | null;
  size: number | null;
  /** `X-Repo-Commit`: the commit the revision resolved to. */
  commit: string | null;
  /** `url` is on another origin than the resolve URL (the CDN): the one cross-origin hop is taken. */
  crossOrigin?: boolean;
}

const MAX_SAME_ORIGIN_REDIRECTS = 5;

export function checkEndpoint(endpoint: string): string {
  let u: URL;
  try {
    u = new URL(endpoint);
  } catch {
    throw new AppError("INVALID_BASE_URL", `hub endpoint "${endpoint}" (HF_ENDPOINT) is not a URL`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:")
    throw new AppError("INVALID_BASE_URL", `hub endpoint must be http(s), got "${endpoint}"`);
  return endpoint.replace(/\/+$/, "");
}

const enc = (p: string) => p.split("/").map(encodeURIComponent).join("/");

/** `{endpoint}/{repo}/resolve/{revision}` (the repo's `org/name` slash kept). */
export const hubBase = (endpoint: string, ref: HubRef) =>
  `${checkEndpoint(endpoint)}/${enc(ref.repo)}/resolve/${encodeURIComponent(ref.revision)}`;

export const hubFileUrl = (endpoint: string, ref: HubRef, path: string) => `${hubBase(endpoint, ref)}/${enc(path)}`;

/** `W/"abc"` → `abc`. */
function normEtag(v: string | null): string | null {
  if (!v) return null;
  return v.replace(/^W\//, "").replace(/^"|"$/g, "").toLowerCase();
}

function num(v: string | null): number | null {
  if (v === null || !/^\d+$/.test(v)) return null;
  return Number(v);
}

/** HEAD the resolve URL (same-origin redirects followed, the first cross-origin one not). */
export async function hubFileMeta(resolveUrl: string, fetchImpl: FetchImpl, timeoutMs: number): Promise<HubFileMeta> {
  let url = resolveUrl;
  for (let hop = 0; ; hop++) {
    let res: Response;
    try {
      res = await fetchImpl(url, {
        method: "HEAD",
        redirect: "manual",
        headers: { "accept-encoding": "identity" },
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (e) {
      throw new AppError(INTERRUPTED, `HEAD ${url}: ${(e as Error).message}`);
    }
    await res.body?.cancel();
    const meta = (target: string, crossOrigin = false): HubFileMeta => {
      const linked = normEtag(res.headers.get("x-linked-etag"));
      const etag = linked ?? normEtag(res.headers.get("etag"));
      return {
        url: target,
        sha256: etag && /^[0-9a-f]{64}$/.test(etag) ? etag : null,
        gitSha1: !linked && etag && /^[0-9a-f]{40}$/.test(etag) ? etag : null,
        // A redirect's Content-Length is its own (often 0) body's, never the file's: only
        // X-Linked-Size speaks for the target (a 302 with Content-Length: 0 read as a 0-byte file
        // left no .part behind and failed with a raw ENOENT).
        size:
          num(res.headers.get("x-linked-size")) ??
          (linked || res.headers.get("content-encoding") || res.status >= 300
            ? null
            : num(res.headers.get("content-length"))),
        commit: res.headers.get("x-repo-commit"),
        crossOrigin,
      };
    };
    if (res.status >= 300 && res.status < 400) {
      const loc = res.headers.get("location");
      if (!loc) throw new AppError("MODEL_DOWNLOAD_FAILED", `HEAD ${url}: HTTP ${res.status} without a Location`);
      const next = new URL(loc, url);
      if (next.origin !== new URL(url).origin) return meta(next.toString(), true);
      if (hop >= MAX_SAME_ORIGIN_REDIRECTS)
        throw new AppError(
          "MODEL_DOWNLOAD_FAILED",
          `HEAD ${resolveUrl}: more than ${MAX_SAME_ORIGIN_REDIRECTS} redirects`,
        );
      url = next.toString();
      continue;
    }
    if (res.ok) return meta(url);
    const msg = `HEAD ${url}: HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""}`;
    if (res.status === 401 || res.status === 403) {
      throw new AppError(
        "MODEL_DOWNLOAD_FAILED",
        `${msg}: the repository is private or gated (vsearch sends no token); download it yourself and use vsearch models import`,
      );
    }
    if (res.status === 404) throw new AppError("MODEL_DOWNLOAD_FAILED", `${msg}: no such file at this revision`);
    throw new AppError(res.status >= 500 || res.status === 429 ? INTERRUPTED : "MODEL_DOWNLOAD_FAILED", msg);
  }
}

/** git's object id of a file: sha1 over `blob <size>\0` + the bytes (what the hub's ETag is for non-LFS files). */
export async function gitBlobSha1(path: string, size: number): Promise<string> {
  const h = createHash("sha1").update(`blob ${size}\0`);
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest("hex");
}
