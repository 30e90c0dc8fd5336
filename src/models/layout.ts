/**
 * What a model folder must contain for its role, which dtype it carries, which files are kept on
 * install, and the model id. Pure functions over lists of relative paths and hashes.
 */
import { createHash } from "node:crypto";
import { AppError } from "../core/errors.ts";
import { onnxFile, type WeightDtype } from "../inference/dtype.ts";
import type { InstalledFile, ModelRole } from "./types.ts";

interface RoleLayout {
  /** Non-ONNX files the loader reads (src/inference/clip.ts, whisper.ts). */
  files: string[];
  /** ONNX file stems; `onnx/<stem>.onnx` is fp32, `onnx/<stem>_quantized.onnx` q8. */
  stems: string[];
}

export const ROLE_LAYOUT: Record<ModelRole, RoleLayout> = {
  "image-text": {
    files: ["config.json", "tokenizer.json", "tokenizer_config.json", "preprocessor_config.json"],
    stems: ["vision_model", "text_model"],
  },
  speech: {
    files: [
      "config.json",
      "generation_config.json",
      "preprocessor_config.json",
      "tokenizer.json",
      "tokenizer_config.json",
    ],
    stems: ["encoder_model", "decoder_model_merged"],
  },
  // Sentence embeddings (transformers.js feature-extraction layout): one ONNX graph.
  text: { files: ["config.json", "tokenizer.json", "tokenizer_config.json"], stems: ["model"] },
};

/** Model families each role accepts, by `config.json` `model_type`. */
const ROLE_MODEL_TYPES: Partial<Record<ModelRole, string[]>> = { "image-text": ["clip"], speech: ["whisper"] };

const DTYPE_PREFERENCE: WeightDtype[] = ["q8", "fp32"];

/** Every ONNX file (plus external-data siblings) a role needs at one dtype. */
export function onnxFilesFor(role: ModelRole, dtype: WeightDtype): string[] {
  return ROLE_LAYOUT[role].stems.map((s) => onnxFile(s, dtype));
}

/**
 * The dtype whose ONNX files are all present: `want` if given, otherwise q8 (smaller, faster to
 * load, the default set) before fp32. Null when no dtype is complete.
 */
export function detectDtype(present: ReadonlySet<string>, role: ModelRole, want?: WeightDtype): WeightDtype | null {
  for (const d of want ? [want] : DTYPE_PREFERENCE) {
    if (onnxFilesFor(role, d).every((f) => present.has(f))) return d;
  }
  return null;
}

export interface Layout {
  dtype: WeightDtype;
  /** The files the runtime loads: the role's files and the chosen ONNX weights (+ external data). */
  loaded: string[];
  /** Whether a file is installed: everything except ONNX files of other dtypes/graphs. */
  keep(path: string): boolean;
}

/** ONNX Runtime stores weights over 2 GB beside the graph: `x.onnx_data`, `x.onnx_data_1`, `x.onnx.data`. */
function isExternalDataOf(path: string, onnx: string): boolean {
  return path === `${onnx}_data` || path === `${onnx}.data` || path.startsWith(`${onnx}_data_`);
}

/** Checks a folder listing against its role; throws 400 INVALID_MODEL naming every missing file. */
export function checkLayout(paths: Iterable<string>, role: ModelRole, want?: WeightDtype): Layout {
  const present = new Set(paths);
  const spec = ROLE_LAYOUT[role];
  const dtype = detectDtype(present, role, want);
  const missing = spec.files.filter((f) => !present.has(f));
  if (dtype === null) {
    const options = (want ? [want] : DTYPE_PREFERENCE).map((d) => `${d}: ${onnxFilesFor(role, d).join(" + ")}`);
    missing.push(`the ONNX weights (${options.join(", or ")})`);
  }
  if (missing.length > 0 || dtype === null) {
    throw new AppError(
      "INVALID_MODEL",
      `not a complete ${role} model (transformers.js layout): missing ${missing.join(", ")}`,
    );
  }
  const onnx = onnxFilesFor(role, dtype);
  const loaded = [...spec.files, ...onnx, ...[...present].filter((p) => onnx.some((o) => isExternalDataOf(p, o)))];
  const loadedSet = new Set(loaded);
  // Unused ONNX variants (fp16, q4, the combined `model.onnx` of a CLIP repo) can be gigabytes;
  // they are not copied. Everything else (licence, readme, extra tokenizer files) is kept.
  return { dtype, loaded: loaded.sort(), keep: (p) => !p.startsWith("onnx/") || loadedSet.has(p) };
}

/** `config.json` must be a JSON object whose `model_type` fits the role. */
export function checkConfig(text: string, role: ModelRole): void {
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch (e) {
    throw new AppError("INVALID_MODEL", `config.json is not valid JSON: ${(e as Error).message}`);
  }
  const type = (config as { model_type?: unknown } | null)?.model_type;
  if (typeof config !== "object" || config === null || typeof type !== "string") {
    throw new AppError("INVALID_MODEL", "config.json has no model_type");
  }
  const allowed = ROLE_MODEL_TYPES[role];
  if (allowed && !allowed.includes(type)) {
    throw new AppError(
      "INVALID_MODEL",
      `config.json says model_type "${type}"; role ${role} needs ${allowed.join(" or ")}`,
    );
  }
}

/**
 * `name@<12 hex>`: SHA-256 over `sha256  path` lines of the loaded files, sorted by path. Only the
 * files that determine the model's outputs count, so the same weights get the same id whether they
 * came from `import` of a Hugging Face folder (with a README) or from `pull` of a mirror. Every
 * vector row is tagged with this id; a different id means `vsearch reindex`.
 */
export function computeModelId(name: string, files: readonly InstalledFile[], loaded: readonly string[]): string {
  const byPath = new Map(files.map((f) => [f.path, f.sha256]));
  const h = createHash("sha256");
  for (const p of [...loaded].sort()) {
    const sha = byPath.get(p);
    if (!sha) throw new Error(`computeModelId: no hash for ${p}`);
    h.update(`${sha}  ${p}\n`);
  }
  return `${name}@${h.digest("hex").slice(0, 12)}`;
}
