/**
 * Getting an import source (a model folder, or a .tar / .tar.gz of one) into a staging folder
 * inside the models folder, with every file hashed on the way. Nothing here touches the registry.
 */
import { mkdir, readFile, readdir, rm, stat } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { AppError } from "../core/errors.ts";
import { copyHashed, listFiles } from "./fsutil.ts";
import { parseModelManifest } from "./manifest.ts";
import { extractTar } from "./tar.ts";
import { type InstalledFile, MODEL_MANIFEST_FILE, type ModelManifest } from "./types.ts";

export interface Staged {
  /** The model folder inside the staging area. */
  dir: string;
  /** Every file under `dir` (the vsearch manifest excluded), hashed. */
  files: InstalledFile[];
  /** The vsearch model manifest that came with the source (an exported tar has one). */
  manifest: ModelManifest | null;
  /** A name to use when neither --name nor the manifest gives one. */
  nameHint: string;
  /** Source files left out (ONNX weights of other dtypes or graphs). */
  skipped: string[];
}

async function readOwnManifest(dir: string, where: string): Promise<ModelManifest | null> {
  const text = await readFile(join(dir, MODEL_MANIFEST_FILE), "utf8").catch(() => null);
  return text === null ? null : parseModelManifest(text, where, { strict: false });
}

/** Copies a model folder into `staging/m`, skipping what `keep` rejects (unused ONNX variants). */
export async function stageFolder(
  src: string,
  staging: string,
  keep: (paths: string[], manifest: ModelManifest | null) => (p: string) => boolean,
): Promise<Staged> {
  const from = resolve(src);
  const manifest = await readOwnManifest(from, join(from, MODEL_MANIFEST_FILE));
  const paths = (await listFiles(from)).filter((p) => !(manifest && p === MODEL_MANIFEST_FILE));
  const wanted = keep(paths, manifest);
  const dir = join(staging, "m");
  await mkdir(dir, { recursive: true });
  const files: InstalledFile[] = [];
  for (const p of paths.filter(wanted)) files.push({ path: p, ...(await copyHashed(join(from, p), join(dir, p))) });
  return { dir, files, manifest, nameHint: basename(from), skipped: paths.filter((p) => !wanted(p)) };
}

/**
 * Extracts a tar into `staging/x` and finds the model folder: the archive root when it has
 * `config.json` (or a vsearch manifest), else its single top-level folder (`tar -C parent -cf …
 * name`, and every `vsearch models export`).
 */
export async function stageTar(tarFile: string, staging: string): Promise<Staged> {
  const x = join(staging, "x");
  await mkdir(x, { recursive: true });
  const all = await extractTar(tarFile, x);
  const atRoot = all.some((f) => f.path === "config.json" || f.path === MODEL_MANIFEST_FILE);
  let prefix = "";
  if (!atRoot) {
    const top = (await readdir(x, { withFileTypes: true })).filter((e) => !e.name.startsWith("."));
    if (top.length !== 1 || !top[0].isDirectory()) {
      throw new AppError(
        "INVALID_MODEL",
        `${tarFile}: no config.json at the top of the archive or in a single top-level folder`,
      );
    }
    prefix = `${top[0].name}/`;
  }
  const dir = prefix ? join(x, prefix) : x;
  const manifest = await readOwnManifest(dir, `${tarFile}: ${prefix}${MODEL_MANIFEST_FILE}`);
  if (manifest) await rm(join(dir, MODEL_MANIFEST_FILE));
  const files = all
    .filter((f) => f.path.startsWith(prefix))
    .map((f) => ({ ...f, path: f.path.slice(prefix.length) }))
    .filter((f) => !(manifest && f.path === MODEL_MANIFEST_FILE));
  const nameHint = prefix ? prefix.slice(0, -1) : basename(tarFile).replace(/\.(tar\.gz|tgz|tar)$/i, "");
  return { dir, files, manifest, nameHint, skipped: [] };
}

/** `dir`, `tar` or a 404 for a path that is neither. */
export async function sourceKind(src: string): Promise<"dir" | "tar"> {
  const s = await stat(src).catch(() => null);
  if (!s) throw new AppError("NOT_FOUND", `${src}: no such file or folder`);
  if (s.isDirectory()) return "dir";
  if (s.isFile()) return "tar";
  throw new AppError("INVALID_MODEL", `${src} is neither a folder nor a tar archive`);
}
