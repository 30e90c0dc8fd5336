/**
 * Installing, checking and moving models. Every install goes the same way, whatever the source:
 * stage the files in `<models-dir>/.staging-*` (hashing them), check the layout for the role,
 * optionally load it (`verifyLoad`), rename the folder into place as `<name>-<12 hex of the model
 * id>`, then switch the registry in one atomic write. A crash at any point leaves either the old
 * state or the new one; leftovers (staging folders, superseded versions) are removed by the next
 * changing command. Versioned folder names mean a running server never sees a model's files change
 * under a path it already loaded: a new version is a new path.
 *
 * Over the ~450-line guide on purpose: every install path (pull, import, activate, remove) goes
 * through the same staged steps here, so the crash-safety argument above can be read in one file.
 */
import { mkdir, mkdtemp, readFile, readdir, rename, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { AppError } from "../core/errors.ts";
import type { WeightDtype } from "../inference/dtype.ts";
import type { FetchImpl } from "./download.ts";
import { exists, hashFile, sizeOf, syncDir, withModelsLock } from "./fsutil.ts";
import { checkConfig, checkLayout, computeModelId, type Layout } from "./layout.ts";
import { builtinManifest, manifestOf, planPull } from "./manifest.ts";
import { DEFAULT_HF_ENDPOINT } from "./hub.ts";
import {
  fetchFiles,
  fetchMirrorManifest,
  type FileSource,
  hubSource,
  mirrorSource,
  modelBaseUrl,
  type PullProgress,
} from "./pull.ts";
import { ModelRegistry } from "./registry.ts";
import { type Staged, sourceKind, stageFolder, stageTar } from "./source.ts";
import { writeTar } from "./tar.ts";
import {
  type BuiltinManifest,
  checkName,
  type InstalledFile,
  type InstalledModel,
  MODEL_MANIFEST_FILE,
  MODEL_ROLES,
  type ModelManifest,
  type ModelRole,
  type RegistryRecord,
} from "./types.ts";

/** Loads a staged model for real (the composition root runs it in the inference pool); throws if it cannot. */
export type VerifyLoad = (dir: string, role: ModelRole, dtype: WeightDtype) => Promise<void>;

export interface ModelServiceOptions {
  modelsDir: string;
  /** Default load check for imports and pulls; none when omitted. */
  verifyLoad?: VerifyLoad;
  fetchImpl?: FetchImpl;
  now?: () => Date;
  /** The list `pull` falls back on; default the bundled `models/manifest.json`. */
  builtin?: BuiltinManifest;
}

export interface ImportOptions {
  /** Required unless the source carries a vsearch manifest (an exported tar). */
  role?: ModelRole;
  name?: string;
  /** Make it the role's active model (default true). */
  activate?: boolean;
  /** Which weights to install when the folder has both (default q8). */
  dtype?: WeightDtype;
  /** Overrides the service's load check; `false` skips it. */
  verifyLoad?: VerifyLoad | false;
}

export interface PullOptions {
  /** A mirror (`<base>/<name>/…`, see docs/MODELS.md); without one, the Hugging Face hub. */
  baseUrl?: string;
  /** The hub's address when no mirror is given (HF_ENDPOINT; default https://huggingface.co). */
  hubEndpoint?: string;
  fetchImpl?: FetchImpl;
  activate?: boolean;
  verifyLoad?: VerifyLoad | false;
  onProgress?: (p: PullProgress) => void;
  /** Extra attempts per file after an interruption (default 3). */
  retries?: number;
  /** Ceiling for a file whose size neither the manifest nor the server gives (default 8 GiB). */
  maxFileBytes?: number;
  retryDelayMs?: number;
  /** Give up on a connection that sends nothing for this long (default 60 s). */
  stallMs?: number;
}

export interface InstallResult {
  model: InstalledModel;
  activated: boolean;
  /** The model id this name had before, when it changed. */
  replaced: string | null;
  /** Files of the source not installed (ONNX weights of other dtypes or graphs). */
  skipped: string[];
}

export interface PullResult extends InstallResult {
  manifest: "mirror" | "built-in";
  /** Where the files came from: a mirror, or the hub (at the built-in list's pinned revision). */
  source: "mirror" | "hub";
  from: string;
  /** The hub's `X-Repo-Commit` for the revision, when it sent one. */
  commit: string | null;
  downloaded_bytes: number;
  /** Files continued (HTTP Range) from a `.part` left by an earlier run. */
  resumed: string[];
  /** Files with no sha256 in any manifest: hashed and recorded now, verified from here on. */
  unverified: string[];
}

export interface VerifyReport {
  name: string;
  model_id: string;
  dir: string;
  ok: boolean;
  checked: number;
  missing: string[];
  mismatched: {
    path: string;
    expected_size: number;
    actual_size: number;
    expected_sha256: string;
    actual_sha256: string;
  }[];
}

export interface ModelListing {
  active: Record<ModelRole, string | null>;
  installed: (InstalledModel & { active: boolean })[];
  /** Built-in models not installed yet (`vsearch models pull NAME`). */
  available: { name: string; role: ModelRole; license: string | null; description: string | null; default: boolean }[];
}

export interface ExportResult {
  name: string;
  model_id: string;
  file: string;
  bytes: number;
  files: number;
}

const VERSION_DIR = (name: string) => new RegExp(`^${name.replace(/[.]/g, "\\.")}-[0-9a-f]{12}$`);

export class ModelService {
  readonly registry: ModelRegistry;
  private busy = false;

  constructor(private readonly opts: ModelServiceOptions) {
    this.registry = new ModelRegistry(opts.modelsDir);
  }

  get modelsDir(): string {
    return this.registry.modelsDir;
  }

  private builtin(): BuiltinManifest {
    return this.opts.builtin ?? builtinManifest();
  }

  list(): ModelListing {
    const state = this.registry.read();
    const active = Object.fromEntries(MODEL_ROLES.map((r) => [r, state.active[r] ?? null])) as Record<
      ModelRole,
      string | null
    >;
    const installed = this.registry.list().map((m) => ({ ...m, active: active[m.role] === m.name }));
    const b = this.builtin();
    const available = b.models
      .filter((m) => !state.models[m.name])
      .map((m) => ({
        name: m.name,
        role: m.role,
        license: m.license ?? null,
        description: m.description ?? null,
        default: b.default.includes(m.name),
      }));
    return { active, installed, available };
  }

  /** Installs a model folder or a .tar/.tar.gz of one. */
  async importModel(source: string, o: ImportOptions = {}): Promise<InstallResult> {
    return this.exclusive(async () => {
      const staging = await this.newStaging();
      try {
        const early: { meta?: { role: ModelRole; name: string }; layout?: Layout } = {};
        let staged: Staged;
        if ((await sourceKind(source)) === "dir") {
          // Layout first, from the listing: a bad folder fails before anything is copied.
          staged = await stageFolder(source, staging, (paths, manifest) => {
            early.meta = this.identify(o, manifest, source);
            early.layout = checkLayout(paths, early.meta.role, o.dtype ?? manifest?.dtype);
            return early.layout.keep;
          });
        } else {
          staged = await stageTar(source, staging);
        }
        const { role, name } = early.meta ?? this.identify(o, staged.manifest, staged.nameHint);
        const lay =
          early.layout ??
          checkLayout(
            staged.files.map((f) => f.path),
            role,
            o.dtype ?? staged.manifest?.dtype,
          );
        const skipped = await this.prune(staged, lay);
        if (staged.manifest) checkAgainstManifest(staged.files, staged.manifest, lay, source);
        return await this.install(staged, lay, {
          role,
          name,
          staging,
          activate: o.activate ?? true,
          verifyLoad: o.verifyLoad,
          license: staged.manifest?.license ?? this.builtin().models.find((m) => m.name === name)?.license ?? null,
          source: { kind: "import", from: source },
          skipped,
        });
      } finally {
        await rm(staging, { recursive: true, force: true });
      }
    });
  }

  /** Downloads `<baseUrl>/<name>/…` (resumable, hash-checked) and installs it like an import. */
  async pull(name: string, o: PullOptions): Promise<PullResult> {
    checkName(name);
    return this.exclusive(async () => {
      const fetchImpl = o.fetchImpl ?? this.opts.fetchImpl ?? fetch;
      const stallMs = o.stallMs ?? 60_000;
      const builtin = this.builtin().models.find((m) => m.name === name) ?? null;
      let mirror: ModelManifest | null = null;
      let source: FileSource;
      let plan;
      if (o.baseUrl) {
        const base = modelBaseUrl(o.baseUrl, name);
        mirror = await fetchMirrorManifest(base, fetchImpl, stallMs);
        plan = planPull(name, mirror, builtin, `${base}/${MODEL_MANIFEST_FILE}`);
        source = mirrorSource(base);
      } else {
        if (!builtin)
          throw new AppError(
            "MODEL_NOT_FOUND",
            `model "${name}" is not in the built-in list (vsearch models list shows what can be pulled); pass --base-url for a mirror`,
          );
        if (!builtin.hub)
          throw new AppError(
            "INVALID_BASE_URL",
            `model "${name}" has no Hugging Face repository in the built-in list; pass --base-url for a mirror`,
          );
        source = hubSource(o.hubEndpoint ?? DEFAULT_HF_ENDPOINT, builtin.hub, fetchImpl, stallMs);
        plan = planPull(name, null, builtin, source.label);
      }
      // Check the file list before downloading gigabytes that could never be installed.
      const lay = checkLayout(
        plan.files.map((f) => f.path),
        plan.role,
        plan.dtype,
      );
      const partDir = join(this.modelsDir, ".partial", name);
      const got = await fetchFiles({ ...plan, files: plan.files.filter((f) => lay.keep(f.path)) }, source, partDir, {
        fetchImpl,
        retries: o.retries ?? 3,
        retryDelayMs: o.retryDelayMs ?? 1000,
        stallMs,
        maxUnknownBytes: o.maxFileBytes,
        onProgress: o.onProgress,
      });
      const staging = await this.newStaging();
      try {
        const dir = join(staging, "m");
        for (const f of got.files) {
          await mkdir(dirname(join(dir, f.path)), { recursive: true });
          await rename(got.partFile(f.path), join(dir, f.path));
        }
        const staged: Staged = { dir, files: got.files, manifest: mirror, nameHint: name, skipped: [] };
        const result = await this.install(staged, lay, {
          role: plan.role,
          name,
          staging,
          activate: o.activate ?? true,
          verifyLoad: o.verifyLoad,
          license: plan.license,
          source: { kind: "pull", from: source.label },
          skipped: plan.files.filter((f) => !lay.keep(f.path)).map((f) => f.path),
        });
        await rm(partDir, { recursive: true, force: true });
        return {
          ...result,
          manifest: plan.fromMirror ? "mirror" : "built-in",
          source: o.baseUrl ? "mirror" : "hub",
          from: source.label,
          commit: got.commit,
          downloaded_bytes: got.downloaded,
          resumed: got.resumed,
          unverified: got.unverified,
        };
      } finally {
        await rm(staging, { recursive: true, force: true });
      }
    });
  }

  /** Re-hashes installed files against the registry. */
  async verify(name?: string): Promise<VerifyReport[]> {
    const models = name ? [this.registry.require(name)] : this.registry.list();
    const reports: VerifyReport[] = [];
    for (const m of models) {
      const r: VerifyReport = {
        name: m.name,
        model_id: m.model_id,
        dir: m.dir,
        ok: true,
        checked: 0,
        missing: [],
        mismatched: [],
      };
      for (const f of m.files) {
        const path = join(m.dir, f.path);
        if ((await sizeOf(path)) === null) {
          r.missing.push(f.path);
          continue;
        }
        const got = await hashFile(path);
        r.checked++;
        if (got.sha256 !== f.sha256 || got.size !== f.size) {
          r.mismatched.push({
            path: f.path,
            expected_size: f.size,
            actual_size: got.size,
            expected_sha256: f.sha256,
            actual_sha256: got.sha256,
          });
        }
      }
      r.ok = r.missing.length === 0 && r.mismatched.length === 0;
      reports.push(r);
    }
    return reports;
  }

  /**
   * Writes `<name>/manifest.json` + `<name>/<files>` as a tar (gzip when the file ends in .gz/.tgz).
   * Extracted side by side, such tars form a mirror folder for `pull --base-url`.
   */
  async exportModel(name: string, tarPath: string): Promise<ExportResult> {
    const m = this.registry.require(name);
    for (const f of m.files) {
      const size = await sizeOf(join(m.dir, f.path));
      if (size !== f.size) {
        throw new AppError(
          "MODEL_FILES_CHANGED",
          `${name}: ${f.path} is ${size === null ? "missing" : `${size} bytes, expected ${f.size}`}; run vsearch models verify`,
        );
      }
    }
    const manifest: ModelManifest = manifestOf(m);
    const tmp = `${tarPath}.${process.pid}.tmp`;
    try {
      const written = await writeTar(
        tmp,
        [
          { path: `${name}/${MODEL_MANIFEST_FILE}`, data: Buffer.from(JSON.stringify(manifest, null, 2) + "\n") },
          ...m.files.map((f) => ({ path: `${name}/${f.path}`, file: join(m.dir, f.path), size: f.size })),
        ],
        { gzip: /\.(t?gz)$/i.test(tarPath), mtime: Date.parse(m.installed_at) / 1000 },
      );
      // The archive carries what was read, so it is checked, not the files beforehand.
      for (const f of m.files) {
        if (written.get(`${name}/${f.path}`)?.sha256 !== f.sha256) {
          throw new AppError(
            "MODEL_FILES_CHANGED",
            `${name}: ${f.path} does not match its recorded sha256; run vsearch models verify`,
          );
        }
      }
      await rename(tmp, tarPath);
    } finally {
      await rm(tmp, { force: true });
    }
    return { name, model_id: m.model_id, file: tarPath, bytes: (await stat(tarPath)).size, files: m.files.length };
  }

  /** Makes an installed model its role's active one (one registry write). */
  async activate(name: string): Promise<InstalledModel> {
    return this.exclusive(() => this.registry.setActive(name));
  }

  /** Uninstalls a model: registry first (it stops being used), then its files. */
  async remove(name: string): Promise<InstalledModel> {
    return this.exclusive(async () => {
      const m = this.registry.require(name);
      await this.registry.update((s) => {
        delete s.models[name];
        if (s.active[m.role] === name) delete s.active[m.role];
      });
      await rm(m.dir, { recursive: true, force: true });
      return m;
    });
  }

  // ------------------------------------------------------------------ internals

  private identify(
    o: ImportOptions,
    manifest: ModelManifest | null,
    nameHint: string,
  ): { role: ModelRole; name: string } {
    if (o.role && manifest && manifest.role !== o.role) {
      throw new AppError("INVALID_MODEL", `the source's manifest says role ${manifest.role}, --role says ${o.role}`);
    }
    const role = o.role ?? manifest?.role;
    if (!role)
      throw new AppError(
        "INVALID_MODEL",
        `the role is required (--role ${MODEL_ROLES.join("|")}): the source has no vsearch manifest`,
      );
    const base = nameHint.split("/").filter(Boolean).pop() ?? "";
    return { role, name: checkName(o.name ?? manifest?.name ?? base) };
  }

  /** Deletes staged files the layout does not keep; returns every source file left out. */
  private async prune(staged: Staged, layout: Layout): Promise<string[]> {
    const drop = staged.files.filter((f) => !layout.keep(f.path)).map((f) => f.path);
    for (const p of drop) await rm(join(staged.dir, p), { force: true });
    staged.files = staged.files.filter((f) => layout.keep(f.path));
    return [...staged.skipped, ...drop].sort();
  }

  private async install(
    staged: Staged,
    layout: Layout,
    x: {
      role: ModelRole;
      name: string;
      staging: string;
      activate: boolean;
      verifyLoad: VerifyLoad | false | undefined;
      license: string | null;
      source: RegistryRecord["source"];
      skipped: string[];
    },
  ): Promise<InstallResult> {
    checkConfig(await readFile(join(staged.dir, "config.json"), "utf8"), x.role);
    const files = [...staged.files].sort((a, b) => (a.path < b.path ? -1 : 1));
    const modelId = computeModelId(x.name, files, layout.loaded);
    const verifyLoad = x.verifyLoad === false ? undefined : (x.verifyLoad ?? this.opts.verifyLoad);
    if (verifyLoad) {
      try {
        await verifyLoad(staged.dir, x.role, layout.dtype);
      } catch (e) {
        throw new AppError(
          "MODEL_LOAD_FAILED",
          `${x.name} (${x.role}, ${layout.dtype}) does not load: ${(e as Error).message ?? String(e)}`,
        );
      }
    }
    const dirName = `${x.name}-${modelId.slice(modelId.lastIndexOf("@") + 1)}`;
    const final = join(this.modelsDir, dirName);
    const prev = this.registry.get(x.name);
    if (await exists(final)) await rename(final, join(x.staging, "previous")); // same id re-imported
    await rename(staged.dir, final);
    await syncDir(this.modelsDir);
    const record: RegistryRecord = {
      name: x.name,
      role: x.role,
      dir: dirName,
      dtype: layout.dtype,
      files,
      installed_at: (this.opts.now?.() ?? new Date()).toISOString(),
      model_id: modelId,
      license: x.license,
      source: x.source,
    };
    await this.registry.put(record, { activate: x.activate });
    await this.sweepVersions(x.name);
    return {
      model: this.registry.require(x.name),
      activated: x.activate,
      replaced: prev && prev.model_id !== modelId ? prev.model_id : null,
      skipped: x.skipped,
    };
  }

  /** Removes `<name>-<hex>` folders the registry no longer points at (superseded or orphaned). */
  private async sweepVersions(name: string): Promise<void> {
    const keep = new Set(Object.values(this.registry.read().models).map((r) => r.dir));
    const re = VERSION_DIR(name);
    for (const entry of await readdir(this.modelsDir)) {
      if (re.test(entry) && !keep.has(entry)) await rm(join(this.modelsDir, entry), { recursive: true, force: true });
    }
  }

  private async newStaging(): Promise<string> {
    return mkdtemp(join(this.modelsDir, ".staging-"));
  }

  /** One changing operation at a time: in this process (flag) and across processes (lock file). */
  private async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.busy) throw new AppError("MODELS_BUSY", "another models operation is running in this process");
    this.busy = true;
    try {
      return await withModelsLock(this.modelsDir, async () => {
        // Staging folders left by a crash; the lock guarantees none is in use.
        for (const e of await readdir(this.modelsDir)) {
          if (e.startsWith(".staging-")) await rm(join(this.modelsDir, e), { recursive: true, force: true });
        }
        return fn();
      });
    } finally {
      this.busy = false;
    }
  }
}

/** An exported tar's manifest must match what was extracted, byte for byte. */
function checkAgainstManifest(
  files: readonly InstalledFile[],
  manifest: ModelManifest,
  layout: Layout,
  source: string,
): void {
  const byPath = new Map(files.map((f) => [f.path, f]));
  for (const want of manifest.files) {
    if (!layout.keep(want.path)) continue;
    const got = byPath.get(want.path);
    if (!got) throw new AppError("INVALID_MODEL", `${source}: ${want.path} is listed in its manifest but missing`);
    if ((want.size !== null && got.size !== want.size) || (want.sha256 !== null && got.sha256 !== want.sha256)) {
      throw new AppError(
        "MODEL_HASH_MISMATCH",
        `${source}: ${want.path} has sha256 ${got.sha256} (${got.size} bytes), its manifest says ${want.sha256} (${want.size} bytes)`,
      );
    }
  }
}
