/**
 * The built-in model list and per-model manifests, and how `pull` combines them.
 *
 * Trust model: a mirror serves `<name>/manifest.json` (written by `vsearch models export`) with the
 * size and sha256 of every file, and `pull` checks each download against it. The built-in list
 * (bundled with the binary) names the default models, their roles, files and licences, with hashes
 * where the project knows them; a known built-in hash always wins over a mirror's, so a mirror can
 * add hashes but not change them. A file with no hash anywhere is accepted and its hash recorded
 * on install (trust on first use); `pull` reports such files as unverified.
 */
import builtinJson from "../../models/manifest.json";
import { AppError } from "../core/errors.ts";
import {
  type BuiltinManifest,
  builtinManifestSchema,
  checkRelPath,
  firstIssue,
  type InstalledModel,
  type ManifestEntry,
  type ManifestFile,
  MODEL_MANIFEST_FORMAT,
  type ModelManifest,
  modelManifestSchema,
  type ModelRole,
} from "./types.ts";

function checkPaths(files: readonly ManifestFile[], where: string): void {
  const seen = new Set<string>();
  for (const f of files) {
    const c = checkRelPath(f.path);
    if (!c.ok || c.path !== f.path)
      throw new AppError(
        "INVALID_MODEL",
        `${where}: file path "${f.path}" refused (${c.ok ? "not normalised" : c.reason})`,
      );
    if (seen.has(f.path)) throw new AppError("INVALID_MODEL", `${where}: "${f.path}" listed twice`);
    seen.add(f.path);
  }
}

/** The bundled list, validated on each call (cheap; a broken checked-in file fails loudly in tests). */
export function builtinManifest(raw: unknown = builtinJson): BuiltinManifest {
  const parsed = builtinManifestSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`models/manifest.json: ${firstIssue(parsed.error)}`);
  for (const m of parsed.data.models) checkPaths(m.files, `models/manifest.json ${m.name}`);
  for (const d of parsed.data.default) {
    if (!parsed.data.models.some((m) => m.name === d))
      throw new Error(`models/manifest.json: default "${d}" is not listed`);
  }
  return parsed.data;
}

/** Parses a `<name>/manifest.json`; returns null when the JSON is not a vsearch model manifest. */
export function parseModelManifest(text: string, where: string, opts: { strict: boolean }): ModelManifest | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    if (!opts.strict) return null;
    throw new AppError("INVALID_MODEL", `${where} is not valid JSON: ${(e as Error).message}`);
  }
  // A model folder may carry some other tool's manifest.json; only ours is metadata.
  if (!opts.strict && (raw as { format?: unknown } | null)?.format !== MODEL_MANIFEST_FORMAT) return null;
  const parsed = modelManifestSchema.safeParse(raw);
  if (!parsed.success) throw new AppError("INVALID_MODEL", `${where}: ${firstIssue(parsed.error)}`);
  checkPaths(parsed.data.files, where);
  return parsed.data;
}

/** What `export` writes beside the files: everything needed to pull or import them elsewhere. */
export function manifestOf(m: InstalledModel): ModelManifest {
  return {
    format: MODEL_MANIFEST_FORMAT,
    name: m.name,
    role: m.role,
    dtype: m.dtype,
    ...(m.license ? { license: m.license } : {}),
    model_id: m.model_id,
    files: m.files.map((f) => ({ path: f.path, size: f.size, sha256: f.sha256 })),
  };
}

export interface PullPlan {
  name: string;
  role: ModelRole;
  dtype?: "fp32" | "q8";
  license: string | null;
  files: ManifestFile[];
  /** Whether the mirror served a manifest (else the built-in entry was used). */
  fromMirror: boolean;
}

/** Combines the mirror's manifest (may be null: not served) with the built-in entry (may be null). */
export function planPull(
  name: string,
  mirror: ModelManifest | null,
  builtin: ManifestEntry | null,
  mirrorUrl: string,
): PullPlan {
  if (!mirror && !builtin) {
    throw new AppError(
      "MODEL_NOT_FOUND",
      `model "${name}" is not in the built-in list and ${mirrorUrl} serves no manifest for it`,
    );
  }
  if (mirror && mirror.name !== name) {
    throw new AppError("INVALID_MODEL", `${mirrorUrl} describes "${mirror.name}", not "${name}"`);
  }
  if (mirror && builtin && mirror.role !== builtin.role) {
    throw new AppError(
      "INVALID_MODEL",
      `${mirrorUrl} says role ${mirror.role}; the built-in list says ${builtin.role} for "${name}"`,
    );
  }
  const known = new Map((builtin?.files ?? []).map((f) => [f.path, f]));
  const files = (mirror ?? builtin)!.files.map((f) => {
    const b = known.get(f.path);
    if (b?.sha256 && f.sha256 && b.sha256 !== f.sha256) {
      throw new AppError(
        "MODEL_HASH_MISMATCH",
        `${mirrorUrl}: ${f.path} has sha256 ${f.sha256}, the built-in list says ${b.sha256}`,
      );
    }
    if (b?.size != null && f.size != null && b.size !== f.size) {
      throw new AppError(
        "MODEL_HASH_MISMATCH",
        `${mirrorUrl}: ${f.path} has size ${f.size}, the built-in list says ${b.size}`,
      );
    }
    return { path: f.path, size: f.size ?? b?.size ?? null, sha256: f.sha256 ?? b?.sha256 ?? null };
  });
  return {
    name,
    role: (mirror ?? builtin)!.role,
    dtype: mirror?.dtype ?? builtin?.dtype,
    license: mirror?.license ?? builtin?.license ?? null,
    files,
    fromMirror: mirror !== null,
  };
}
