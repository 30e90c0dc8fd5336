/**
 * `<models-dir>/registry.json`: which models are installed and which one each role uses. The
 * server reads it (ModelCatalog) while `vsearch models …` in another process may rewrite it, so
 * every write replaces the whole file atomically (temp file + rename) and reads notice a new file
 * by its inode/mtime/size without re-parsing on every call.
 */
import { readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { AppError } from "../core/errors.ts";
import type { ActiveModel, ModelCatalog } from "./roles.ts";
import { writeFileAtomic } from "./fsutil.ts";
import {
  firstIssue,
  type InstalledModel,
  MODEL_ROLES,
  type ModelRole,
  REGISTRY_FORMAT,
  type RegistryRecord,
  type RegistryState,
  registrySchema,
} from "./types.ts";

export const REGISTRY_FILE = "registry.json";

const empty = (): RegistryState => ({ format: REGISTRY_FORMAT, active: {}, models: {} });

export class ModelRegistry implements ModelCatalog {
  readonly file: string;
  private cached: { key: string; state: RegistryState } | null = null;

  constructor(readonly modelsDir: string) {
    this.modelsDir = resolve(modelsDir);
    this.file = join(this.modelsDir, REGISTRY_FILE);
  }

  /** The current state (a fresh copy is cheap to get: the parse is cached per file version). */
  read(): RegistryState {
    let key: string;
    try {
      const s = statSync(this.file);
      key = `${s.ino}:${s.mtimeMs}:${s.size}`;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return empty();
      throw e;
    }
    if (this.cached?.key !== key) this.cached = { key, state: this.parse(readFileSync(this.file, "utf8")) };
    return this.cached.state;
  }

  private parse(text: string): RegistryState {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (e) {
      throw new AppError(
        "MODEL_REGISTRY_INVALID",
        `${this.file} is not valid JSON (${(e as Error).message}); restore it from a backup or re-import the models`,
      );
    }
    const parsed = registrySchema.safeParse(raw);
    if (!parsed.success) throw new AppError("MODEL_REGISTRY_INVALID", `${this.file}: ${firstIssue(parsed.error)}`);
    return parsed.data;
  }

  private view(r: RegistryRecord): InstalledModel {
    return { ...r, dir: resolve(this.modelsDir, r.dir) };
  }

  list(): InstalledModel[] {
    return Object.values(this.read().models)
      .sort((a, b) =>
        a.role === b.role ? (a.name < b.name ? -1 : 1) : MODEL_ROLES.indexOf(a.role) - MODEL_ROLES.indexOf(b.role),
      )
      .map((r) => this.view(r));
  }

  get(name: string): InstalledModel | null {
    const r = this.read().models[name];
    return r ? this.view(r) : null;
  }

  require(name: string): InstalledModel {
    const m = this.get(name);
    if (!m) throw new AppError("MODEL_NOT_FOUND", `model "${name}" is not installed (vsearch models list)`);
    return m;
  }

  activeName(role: ModelRole): string | null {
    return this.read().active[role] ?? null;
  }

  /** The model a role uses now, in the shape the pipeline and search need; null when none. */
  active(role: ModelRole): (ActiveModel & { role: ModelRole }) | null {
    const name = this.activeName(role);
    const m = name ? this.get(name) : null;
    if (!m) return null;
    return { name: m.name, role: m.role, dir: m.dir, dtype: m.dtype, modelId: m.model_id };
  }

  /**
   * Applies `change` to the state read fresh from disk and writes the result in one rename.
   * Callers hold the models lock (fsutil.withModelsLock), so read-modify-write does not race.
   */
  async update(change: (state: RegistryState) => void): Promise<RegistryState> {
    this.cached = null;
    const state = structuredClone(this.read());
    change(state);
    const parsed = registrySchema.safeParse(state);
    if (!parsed.success) throw new Error(`registry update produced an invalid state: ${firstIssue(parsed.error)}`);
    await writeFileAtomic(this.file, JSON.stringify(parsed.data, null, 2) + "\n");
    this.cached = null;
    return parsed.data;
  }

  /** Adds or replaces a model (and, when `activate`, makes it its role's model) in one write. */
  async put(record: RegistryRecord, opts: { activate: boolean }): Promise<void> {
    await this.update((s) => {
      // A name moving to another role must not stay active for the old one.
      const prev = s.models[record.name];
      if (prev && prev.role !== record.role && s.active[prev.role] === record.name) delete s.active[prev.role];
      s.models[record.name] = record;
      if (opts.activate) s.active[record.role] = record.name;
    });
  }

  async setActive(name: string): Promise<InstalledModel> {
    const m = this.require(name);
    await this.update((s) => {
      if (!s.models[name]) throw new AppError("MODEL_NOT_FOUND", `model "${name}" is not installed`);
      s.active[m.role] = name;
    });
    return m;
  }
}
