/**
 * A model folder as ONNX Runtime should load it on this machine: the installed folder, or a
 * derived copy whose int8 weights were made signed (signed-weights.ts). The installed files are
 * never touched (their hashes are what `vsearch models verify` checks and what model ids are made
 * of); the derived folder lives under the data dir and holds symlinks to every installed file plus
 * the rewritten ONNX files.
 *
 * It is keyed by the source files' path, size, mtime and inode, so reinstalling a model makes a
 * new one (older ones of the same folder are removed). It is built in a temp folder and renamed
 * into place, so concurrent workers never see half of one: the loser of the race uses the winner's.
 * A model with nothing to convert records that too, so its weights are read only once.
 */
import { createHash } from "node:crypto";
import { mkdir, open, readFile, readdir, realpath, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { threadId } from "node:worker_threads";
import { signMatMulIntegerWeights } from "./signed-weights.ts";

/** Bump when the conversion changes, so older derived folders are rebuilt. */
const CONVERTER_VERSION = 1;
const MARKER = "derived.json";

export interface PreparedModelDir {
  /** The folder to load from: the installed one, or the derived one. */
  dir: string;
  /** Initializers rewritten across the files (0: loaded as installed). */
  converted: number;
  /** True when an earlier run had already done the work. */
  reused: boolean;
}

interface Marker {
  version: number;
  source: string;
  converted: number;
}

/**
 * Returns the folder to load `onnxFiles` (paths relative to `modelDir`, e.g. `onnx/x_quantized.onnx`)
 * from, converting them into `root/<model>-<key>/` on first use.
 */
export async function signedWeightsModelDir(
  modelDir: string,
  onnxFiles: string[],
  root: string,
): Promise<PreparedModelDir> {
  const source = await realpath(modelDir);
  const prefix = `${basename(source)}-${sha(source).slice(0, 8)}`;
  const idParts: unknown[] = [CONVERTER_VERSION, source];
  for (const f of [...onnxFiles].sort()) {
    const s = await stat(join(source, f));
    idParts.push([f, s.size, s.mtimeMs, s.ino]);
  }
  const name = `${prefix}-${sha(JSON.stringify(idParts)).slice(0, 16)}`;
  const target = join(root, name);

  const existing = await readMarker(target);
  if (existing) return { dir: existing.converted > 0 ? target : modelDir, converted: existing.converted, reused: true };

  await mkdir(root, { recursive: true });
  const tmp = join(root, `.tmp-${process.pid}-${threadId}-${Math.random().toString(36).slice(2)}`);
  try {
    let converted = 0;
    await mkdir(tmp);
    // One file at a time, written as it is converted: memory stays at about one model file.
    const rewritten = new Set<string>();
    for (const f of onnxFiles) {
      const r = signMatMulIntegerWeights(new Uint8Array(await readFile(join(source, f))));
      if (r.converted === 0) continue;
      converted += r.converted;
      rewritten.add(f);
      await mkdir(dirname(join(tmp, f)), { recursive: true });
      await writeParts(join(tmp, f), r.parts);
    }
    if (converted > 0) await mirror(source, tmp, "", rewritten);
    await writeFile(
      join(tmp, MARKER),
      JSON.stringify({ version: CONVERTER_VERSION, source, converted } satisfies Marker),
    );
    try {
      await rename(tmp, target);
    } catch (e) {
      // Another worker finished first: use its folder.
      const winner = await readMarker(target);
      if (!winner) throw e;
      return { dir: winner.converted > 0 ? target : modelDir, converted: winner.converted, reused: true };
    }
    await removeStale(root, prefix, name);
    return { dir: converted > 0 ? target : modelDir, converted, reused: false };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/**
 * Removes derived folders whose installed folder is gone (a model removed or replaced by hand) and
 * temp folders a crash left behind. Best effort; called when a worker pool starts.
 */
export async function pruneDerivedModels(root: string): Promise<number> {
  let removed = 0;
  for (const name of await readdir(root).catch(() => [] as string[])) {
    const dir = join(root, name);
    const stale = name.startsWith(".tmp-")
      ? true
      : await readMarker(dir).then((m) =>
          m
            ? stat(m.source).then(
                () => false,
                () => true,
              )
            : true,
        );
    if (stale) {
      await rm(dir, { recursive: true, force: true }).catch(() => {});
      removed++;
    }
  }
  return removed;
}

/** Symlinks every entry of `from/sub` into `to/sub`, except the `rewritten` files (already there). */
async function mirror(from: string, to: string, sub: string, rewritten: Set<string>): Promise<void> {
  for (const entry of await readdir(join(from, sub), { withFileTypes: true })) {
    const rel = sub ? `${sub}/${entry.name}` : entry.name;
    if (rewritten.has(rel)) continue;
    if (entry.isDirectory() && [...rewritten].some((k) => k.startsWith(`${rel}/`))) {
      await mkdir(join(to, rel), { recursive: true });
      await mirror(from, to, rel, rewritten);
    } else {
      await symlink(join(from, rel), join(to, rel));
    }
  }
}

async function writeParts(path: string, parts: Uint8Array[]): Promise<void> {
  const file = await open(path, "w");
  try {
    for (const p of parts) await file.write(p);
  } finally {
    await file.close();
  }
}

async function readMarker(dir: string): Promise<Marker | null> {
  try {
    const m = JSON.parse(await readFile(join(dir, MARKER), "utf8")) as Marker;
    return m.version === CONVERTER_VERSION && Number.isInteger(m.converted) ? m : null;
  } catch {
    return null;
  }
}

/** Derived folders of the same installed folder made from older files. Best effort. */
async function removeStale(root: string, prefix: string, keep: string): Promise<void> {
  const names = await readdir(root).catch(() => [] as string[]);
  await Promise.all(
    names
      .filter((n) => n !== keep && n.startsWith(`${prefix}-`))
      .map((n) => rm(join(root, n), { recursive: true, force: true }).catch(() => {})),
  );
}

function sha(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}
