/**
 * Shapes of the three model documents and their validation:
 *  - the built-in manifest (`models/manifest.json`, bundled into the binary): what can be pulled;
 *  - a model manifest (`<name>/manifest.json` in a mirror or an exported tar): one model, with hashes;
 *  - the registry (`<models-dir>/registry.json`): what is installed and which model each role uses.
 * Pure: no I/O here.
 */
import * as z from "zod";
import { AppError } from "../core/errors.ts";
import type { ModelRole } from "./roles.ts";

export type { ModelRole };
export const MODEL_ROLES = ["image-text", "speech", "text"] as const satisfies readonly ModelRole[];

export const BUILTIN_MANIFEST_FORMAT = "vsearch-models/1";
export const MODEL_MANIFEST_FORMAT = "vsearch-model/1";
export const REGISTRY_FORMAT = "vsearch-registry/1";

/** File name of a model manifest inside a mirror folder or an exported tar. */
export const MODEL_MANIFEST_FILE = "manifest.json";

/** Model names become folder names and URL segments: no slashes, no leading dot, bounded. */
export const MODEL_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const SHA256_RE = /^[0-9a-f]{64}$/;

const roleSchema = z.enum(MODEL_ROLES);
const dtypeSchema = z.enum(["fp32", "q8"]);
const nameSchema = z.string().regex(MODEL_NAME_RE, "must be letters, digits, '.', '_' or '-' (max 100)");

/** A file as a manifest lists it: size and sha256 may be unknown (null) in the built-in manifest. */
const manifestFileSchema = z
  .object({
    path: z.string().min(1).max(400),
    size: z.number().int().nonnegative().nullable(),
    sha256: z.string().regex(SHA256_RE, "must be 64 lowercase hex digits").nullable(),
  })
  .strict();

const entryShape = {
  name: nameSchema,
  role: roleSchema,
  dtype: dtypeSchema.optional(),
  license: z.string().optional(),
  description: z.string().optional(),
  /** Where the weights originally come from (documentation, not fetched). */
  upstream: z.string().optional(),
  model_id: z.string().optional(),
  files: z.array(manifestFileSchema).min(1).max(1000),
};

/** Where `models pull` finds a built-in model on the Hugging Face hub (no `--base-url`). */
const hubSchema = z
  .object({
    /** `org/name` on the hub. */
    repo: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/, "must be org/name"),
    /** A commit sha pins the files; a branch name (main) follows the repository. */
    revision: z
      .string()
      .min(1)
      .max(100)
      .regex(/^[A-Za-z0-9._-]+$/, "must be a commit sha, tag or branch"),
  })
  .strict();

export const manifestEntrySchema = z.object({ ...entryShape, hub: hubSchema.optional() }).strict();
export const builtinManifestSchema = z
  .object({
    format: z.literal(BUILTIN_MANIFEST_FORMAT),
    /** Names `models pull` fetches when given none. */
    default: z.array(nameSchema),
    models: z.array(manifestEntrySchema),
  })
  .strict();
export const modelManifestSchema = z.object({ format: z.literal(MODEL_MANIFEST_FORMAT), ...entryShape }).strict();

export type ManifestFile = z.infer<typeof manifestFileSchema>;
export type ManifestEntry = z.infer<typeof manifestEntrySchema>;
export type BuiltinManifest = z.infer<typeof builtinManifestSchema>;
export type ModelManifest = z.infer<typeof modelManifestSchema>;

/** One installed file as the registry records it (path relative to the model's folder). */
const installedFileSchema = z
  .object({ path: z.string(), size: z.number().int().nonnegative(), sha256: z.string().regex(SHA256_RE) })
  .strict();
export type InstalledFile = z.infer<typeof installedFileSchema>;

const installedSchema = z
  .object({
    name: nameSchema,
    role: roleSchema,
    /** Relative to the models folder, so the folder can be moved, backed up and restored elsewhere. */
    dir: z.string().min(1),
    dtype: dtypeSchema,
    files: z.array(installedFileSchema),
    installed_at: z.string(),
    model_id: z.string(),
    license: z.string().nullable(),
    source: z.object({ kind: z.enum(["import", "pull"]), from: z.string() }).strict(),
  })
  .strict();

export const registrySchema = z
  .object({
    format: z.literal(REGISTRY_FORMAT),
    active: z
      .object({ "image-text": nameSchema.optional(), speech: nameSchema.optional(), text: nameSchema.optional() })
      .strict(),
    models: z.record(z.string(), installedSchema),
  })
  .strict();

export type RegistryRecord = z.infer<typeof installedSchema>;
export type RegistryState = z.infer<typeof registrySchema>;

/** An installed model as the API returns it: `dir` absolute. */
export interface InstalledModel extends Omit<RegistryRecord, "dir"> {
  dir: string;
}

export function isRole(x: unknown): x is ModelRole {
  return (MODEL_ROLES as readonly unknown[]).includes(x);
}

export function parseRole(x: unknown): ModelRole {
  if (!isRole(x))
    throw new AppError("INVALID_MODEL", `role must be one of ${MODEL_ROLES.join(", ")}, got "${String(x)}"`);
  return x;
}

export function checkName(name: string): string {
  if (!MODEL_NAME_RE.test(name)) {
    throw new AppError(
      "INVALID_MODEL",
      `model name "${name}" is not allowed: use letters, digits, '.', '_' or '-' (max 100, no leading dot)`,
    );
  }
  return name;
}

/** First zod issue as one line: `where: what`. */
export function firstIssue(error: z.ZodError): string {
  const i = error.issues[0];
  return `${i.path.join(".") || "(root)"}: ${i.message}`;
}

/**
 * A path inside a model (manifest entry, tar member): relative, `/`-separated, no `.`/`..`/empty
 * segments, no backslashes or NULs. Returns the normalised path (a leading `./` dropped) or the
 * reason it is refused. Refusing instead of normalising `a/../b` keeps one rule for every source.
 */
export function checkRelPath(raw: string): { ok: true; path: string } | { ok: false; reason: string } {
  let p = raw;
  while (p.startsWith("./")) p = p.slice(2);
  if (p.endsWith("/")) p = p.slice(0, -1);
  if (p.length === 0) return { ok: false, reason: "empty path" };
  if (p.includes("\0")) return { ok: false, reason: "NUL in path" };
  if (p.includes("\\")) return { ok: false, reason: "backslash in path" };
  if (p.startsWith("/") || /^[A-Za-z]:/.test(p)) return { ok: false, reason: "absolute path" };
  for (const seg of p.split("/")) {
    if (seg === "..") return { ok: false, reason: "'..' in path" };
    if (seg === "" || seg === ".") return { ok: false, reason: "empty or '.' path segment" };
  }
  if (p.length > 400) return { ok: false, reason: "path longer than 400 characters" };
  return { ok: true, path: p };
}

/** Dotfiles and dot-folders (`.git`, `.gitattributes`, macOS `._x`) are never part of a model. */
export function isHiddenPath(p: string): boolean {
  return p.split("/").some((seg) => seg.startsWith("."));
}
