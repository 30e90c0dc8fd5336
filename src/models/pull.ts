/**
 * `models pull`: the mirror's manifest, then each file into `<models-dir>/.partial/<name>/` with
 * resume and bounded retries, each checked against its size and sha256 before anything is installed.
 */
import { mkdir, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { AppError } from "../core/errors.ts";
import { downloadResumable, type FetchImpl, INTERRUPTED } from "./download.ts";
import { hashFile, sizeOf } from "./fsutil.ts";
import { parseModelManifest, type PullPlan } from "./manifest.ts";
import { type InstalledFile, MODEL_MANIFEST_FILE, type ModelManifest } from "./types.ts";

export interface PullProgress {
  model: string;
  file: string;
  /** Bytes of this model on disk so far (resumed bytes included). */
  bytes: number;
  /** Sum of the manifest sizes; null when some are unknown. */
  total: number | null;
}

export interface FetchFilesOptions {
  fetchImpl: FetchImpl;
  /** Extra attempts per file after an interruption (network error, 5xx, early close). */
  retries: number;
  retryDelayMs: number;
  stallMs: number;
  onProgress?: (p: PullProgress) => void;
}

/** `<base>/<name>`; a `{name}` placeholder in the base is replaced instead (e.g. a Hugging Face URL). */
export function modelBaseUrl(baseUrl: string, name: string): string {
  let u: URL;
  try {
    u = new URL(baseUrl.replaceAll("{name}", "x"));
  } catch {
    throw new AppError(400, "INVALID_BASE_URL", `models base URL "${baseUrl}" is not a URL`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new AppError(400, "INVALID_BASE_URL", `models base URL must be http(s), got "${baseUrl}"`);
  const seg = encodeURIComponent(name);
  return baseUrl.includes("{name}") ? baseUrl.replaceAll("{name}", seg).replace(/\/+$/, "") : `${baseUrl.replace(/\/+$/, "")}/${seg}`;
}

export const fileUrl = (modelBase: string, path: string) => `${modelBase}/${path.split("/").map(encodeURIComponent).join("/")}`;

/** The mirror's `<name>/manifest.json`, or null when it serves none (404: use the built-in entry). */
export async function fetchMirrorManifest(modelBase: string, fetchImpl: FetchImpl, stallMs: number): Promise<ModelManifest | null> {
  const url = `${modelBase}/${MODEL_MANIFEST_FILE}`;
  let res: Response;
  try {
    res = await fetchImpl(url, { signal: AbortSignal.timeout(stallMs), redirect: "follow" });
  } catch (e) {
    throw new AppError(502, "MODEL_DOWNLOAD_FAILED", `GET ${url}: ${(e as Error).message}`);
  }
  if (res.status === 404) {
    await res.body?.cancel();
    return null;
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new AppError(502, "MODEL_DOWNLOAD_FAILED", `GET ${url}: HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""}`);
  }
  const text = await res.text();
  if (text.length > 1 << 20) throw new AppError(400, "INVALID_MODEL", `${url}: manifest larger than 1 MiB`);
  return parseModelManifest(text, url, { strict: true });
}

export interface FetchedFiles {
  files: InstalledFile[];
  /** Where the verified files are: `<partDir>/<path>.part`. */
  partFile: (path: string) => string;
  downloaded: number;
  resumed: string[];
  unverified: string[];
}

/** Downloads every file of the plan into `partDir`, checking size and sha256 of each. */
export async function fetchFiles(plan: PullPlan, modelBase: string, partDir: string, o: FetchFilesOptions): Promise<FetchedFiles> {
  const partFile = (p: string) => join(partDir, `${p}.part`);
  const sizes = plan.files.map((f) => f.size);
  const total = sizes.every((s) => s !== null) ? (sizes as number[]).reduce((a, b) => a + b, 0) : null;
  let done = 0;
  let downloaded = 0;
  const resumed: string[] = [];
  const files: InstalledFile[] = [];

  for (const f of plan.files) {
    const part = partFile(f.path);
    await mkdir(dirname(part), { recursive: true });
    const before = (await sizeOf(part)) ?? 0;
    if (before > 0 && (f.size === null || before < f.size)) resumed.push(f.path);
    let onDisk = before;
    for (let attempt = 0; ; attempt++) {
      try {
        await downloadResumable({
          url: fileUrl(modelBase, f.path),
          partFile: part,
          expectedSize: f.size,
          fetchImpl: o.fetchImpl,
          stallMs: o.stallMs,
          onBytes: (delta, have) => {
            downloaded += delta;
            onDisk = have;
            o.onProgress?.({ model: plan.name, file: f.path, bytes: done + have, total });
          },
        });
        break;
      } catch (e) {
        if (!(e instanceof AppError) || e.code !== INTERRUPTED || attempt >= o.retries) {
          throw e instanceof AppError && e.code === INTERRUPTED
            ? new AppError(502, "MODEL_DOWNLOAD_FAILED", `${e.message}; ${onDisk} bytes kept, run the same pull again to resume`)
            : e;
        }
        await new Promise((r) => setTimeout(r, o.retryDelayMs * (attempt + 1)));
      }
    }
    const got = await hashFile(part);
    const wrong =
      f.size !== null && got.size !== f.size
        ? `${got.size} bytes, the manifest says ${f.size}`
        : f.sha256 !== null && got.sha256 !== f.sha256
          ? `sha256 ${got.sha256}, the manifest says ${f.sha256}`
          : null;
    if (wrong) {
      // Resuming onto bad bytes would never succeed: the next pull starts this file over.
      await rm(part, { force: true });
      throw new AppError(400, "MODEL_HASH_MISMATCH", `${plan.name}: ${f.path} from ${modelBase} has ${wrong}; nothing was installed`);
    }
    done += got.size;
    o.onProgress?.({ model: plan.name, file: f.path, bytes: done, total });
    files.push({ path: f.path, ...got });
  }
  return { files, partFile, downloaded, resumed, unverified: plan.files.filter((f) => f.sha256 === null).map((f) => f.path) };
}
