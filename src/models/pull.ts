/**
 * `models pull`: the file list (a mirror's manifest, or the built-in entry for the hub), then each
 * file into `<models-dir>/.partial/<name>/` with resume and bounded retries, each checked against
 * its size and hash before anything is installed. Where a file comes from and what its source says
 * about it (the hub's X-Linked-Etag / ETag) is a `FileSource`.
 */
import { mkdir, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { AppError } from "../core/errors.ts";
import { downloadResumable, type FetchImpl, fetchFollowing, INTERRUPTED } from "./download.ts";
import { hashFile, sizeOf } from "./fsutil.ts";
import { gitBlobSha1, type HubFileMeta, type HubRef, hubBase, hubFileMeta, hubFileUrl } from "./hub.ts";
import { parseModelManifest, type PullPlan } from "./manifest.ts";
import { type InstalledFile, MODEL_MANIFEST_FILE, type ModelManifest } from "./types.ts";

export interface PullProgress {
  model: string;
  file: string;
  /** Bytes of this model on disk so far (resumed bytes included). */
  bytes: number;
  /** Sum of the manifest sizes; null when some are unknown (the hub's are known file by file). */
  total: number | null;
  /** This file's bytes on disk, and its size when the manifest or the source gave it. */
  fileBytes: number;
  fileTotal: number | null;
}

export interface FetchFilesOptions {
  fetchImpl: FetchImpl;
  /** Extra attempts per file after an interruption (network error, 5xx, early close). */
  retries: number;
  retryDelayMs: number;
  stallMs: number;
  /** Ceiling for a file of unknown size (download.ts DEFAULT_MAX_UNKNOWN_BYTES when absent). */
  maxUnknownBytes?: number;
  onProgress?: (p: PullProgress) => void;
}

/** `<base>/<name>`; a `{name}` placeholder in the base is replaced instead (e.g. a Hugging Face URL). */
export function modelBaseUrl(baseUrl: string, name: string): string {
  let u: URL;
  try {
    u = new URL(baseUrl.replaceAll("{name}", "x"));
  } catch {
    throw new AppError("INVALID_BASE_URL", `models base URL "${baseUrl}" is not a URL`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:")
    throw new AppError("INVALID_BASE_URL", `models base URL must be http(s), got "${baseUrl}"`);
  const seg = encodeURIComponent(name);
  return baseUrl.includes("{name}")
    ? baseUrl.replaceAll("{name}", seg).replace(/\/+$/, "")
    : `${baseUrl.replace(/\/+$/, "")}/${seg}`;
}

export const fileUrl = (modelBase: string, path: string) =>
  `${modelBase}/${path.split("/").map(encodeURIComponent).join("/")}`;

/** Where each file of a pull is fetched, and what that source reports about it. */
export interface FileSource {
  /** Base URL, for messages and the registry's `source.from`. */
  label: string;
  /** Asked again on every attempt (a hub's CDN links are signed and expire). */
  locate(path: string): Promise<HubFileMeta>;
}

/** A mirror: `<base>/<path>`; hashes come from its manifest only. */
export const mirrorSource = (modelBase: string): FileSource => ({
  label: modelBase,
  locate: async (path) => ({ url: fileUrl(modelBase, path), sha256: null, gitSha1: null, size: null, commit: null }),
});

/** The hub: a HEAD per file gives the download location, its sha256 (LFS) or git sha1, and its size. */
export const hubSource = (endpoint: string, ref: HubRef, fetchImpl: FetchImpl, timeoutMs: number): FileSource => ({
  label: hubBase(endpoint, ref),
  locate: (path) => hubFileMeta(hubFileUrl(endpoint, ref, path), fetchImpl, timeoutMs),
});

/** The mirror's `<name>/manifest.json`, or null when it serves none (404: use the built-in entry). */
export async function fetchMirrorManifest(
  modelBase: string,
  fetchImpl: FetchImpl,
  stallMs: number,
): Promise<ModelManifest | null> {
  const url = `${modelBase}/${MODEL_MANIFEST_FILE}`;
  let res: Response;
  try {
    ({ res } = await fetchFollowing(fetchImpl, url, { signal: AbortSignal.timeout(stallMs) }, 1));
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw new AppError("MODEL_DOWNLOAD_FAILED", `GET ${url}: ${(e as Error).message}`);
  }
  if (res.status === 404) {
    await res.body?.cancel();
    return null;
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new AppError(
      "MODEL_DOWNLOAD_FAILED",
      `GET ${url}: HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""}`,
    );
  }
  const text = await readCapped(res, 1 << 20, url);
  return parseModelManifest(text, url, { strict: true });
}

export interface FetchedFiles {
  files: InstalledFile[];
  /** Where the verified files are: `<partDir>/<path>.part`. */
  partFile: (path: string) => string;
  downloaded: number;
  resumed: string[];
  /** Files with no hash from the manifest or the source: recorded as downloaded (trust on first use). */
  unverified: string[];
  /** The commit the source resolved the revision to (hub `X-Repo-Commit`), when it said. */
  commit: string | null;
}

/** A small body (a manifest), read no further than `max` bytes. */
async function readCapped(res: Response, max: number, url: string): Promise<string> {
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    n += chunk.length;
    if (n > max) {
      await res.body?.cancel().catch(() => {});
      throw new AppError("INVALID_MODEL", `${url}: manifest larger than ${max} bytes`);
    }
    parts.push(chunk);
  }
  return new TextDecoder().decode(Buffer.concat(parts));
}

/** Downloads every file of the plan into `partDir`, checking size and hash of each. */
export async function fetchFiles(
  plan: PullPlan,
  source: FileSource,
  partDir: string,
  o: FetchFilesOptions,
): Promise<FetchedFiles> {
  const partFile = (p: string) => join(partDir, `${p}.part`);
  const sizes = plan.files.map((f) => f.size);
  const total = sizes.every((s) => s !== null) ? (sizes as number[]).reduce((a, b) => a + b, 0) : null;
  let done = 0;
  let downloaded = 0;
  let commit: string | null = null;
  const resumed: string[] = [];
  const unverified: string[] = [];
  const files: InstalledFile[] = [];
  const refuse = async (part: string, path: string, wrong: string) => {
    // Resuming onto bad bytes would never succeed: the next pull starts this file over.
    await rm(part, { force: true });
    return new AppError(
      "MODEL_HASH_MISMATCH",
      `${plan.name}: ${path} from ${source.label} ${wrong}; nothing was installed`,
    );
  };

  for (const f of plan.files) {
    const part = partFile(f.path);
    await mkdir(dirname(part), { recursive: true });
    const before = (await sizeOf(part)) ?? 0;
    let onDisk = before;
    let loc: HubFileMeta | null = null;
    for (let attempt = 0; ; attempt++) {
      try {
        loc = await source.locate(f.path);
        commit ??= loc.commit;
        if (f.sha256 && loc.sha256 && f.sha256 !== loc.sha256)
          throw await refuse(part, f.path, `is reported with sha256 ${loc.sha256}, the built-in list pins ${f.sha256}`);
        if (f.size !== null && loc.size !== null && f.size !== loc.size)
          throw await refuse(part, f.path, `is reported as ${loc.size} bytes, the built-in list says ${f.size}`);
        const size = f.size ?? loc.size;
        if (attempt === 0 && before > 0 && (size === null || before < size)) resumed.push(f.path);
        await downloadResumable({
          url: loc.url,
          partFile: part,
          expectedSize: size,
          fetchImpl: o.fetchImpl,
          stallMs: o.stallMs,
          maxUnknownBytes: o.maxUnknownBytes,
          // The hub's HEAD already took the one cross-origin hop to the CDN.
          crossOriginHops: loc.crossOrigin ? 0 : 1,
          onBytes: (delta, have) => {
            downloaded += delta;
            onDisk = have;
            o.onProgress?.({
              model: plan.name,
              file: f.path,
              bytes: done + have,
              total,
              fileBytes: have,
              fileTotal: size,
            });
          },
        });
        break;
      } catch (e) {
        if (!(e instanceof AppError) || e.code !== INTERRUPTED || attempt >= o.retries) {
          throw e instanceof AppError && e.code === INTERRUPTED
            ? new AppError(
                "MODEL_DOWNLOAD_FAILED",
                `${e.message}; ${onDisk} bytes kept, run the same pull again to resume`,
              )
            : e;
        }
        await new Promise((r) => setTimeout(r, o.retryDelayMs * (attempt + 1)));
      }
    }
    if ((await sizeOf(part)) === null)
      throw new AppError(
        "MODEL_DOWNLOAD_FAILED",
        `${plan.name}: ${f.path} from ${source.label}: nothing was downloaded (the source reported an empty file)`,
      );
    const got = await hashFile(part);
    const size = f.size ?? loc!.size;
    const sha256 = f.sha256 ?? loc!.sha256;
    const whence = f.sha256 ? "the manifest says" : "the source reports";
    let wrong =
      size !== null && got.size !== size
        ? `has ${got.size} bytes, ${whence} ${size}`
        : sha256 !== null && got.sha256 !== sha256
          ? `has sha256 ${got.sha256}, ${whence} ${sha256}`
          : null;
    if (!wrong && sha256 === null && loc!.gitSha1) {
      const sha1 = await gitBlobSha1(part, got.size);
      if (sha1 !== loc!.gitSha1) wrong = `has git blob id ${sha1}, the source reports ${loc!.gitSha1}`;
    }
    if (wrong) throw await refuse(part, f.path, wrong);
    if (sha256 === null && !loc!.gitSha1) unverified.push(f.path);
    done += got.size;
    o.onProgress?.({ model: plan.name, file: f.path, bytes: done, total, fileBytes: got.size, fileTotal: got.size });
    files.push({ path: f.path, ...got });
  }
  return { files, partFile, downloaded, resumed, unverified, commit };
}
