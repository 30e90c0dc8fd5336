/**
 * Weight dtypes and ONNX file naming. Pure (no transformers.js import), so the main thread can use
 * it without loading ONNX Runtime.
 */
import { InferenceError } from "./errors.ts";

/** Weight formats this app ships: `fp32` (no file suffix) and `q8` (`_quantized`). */
export type WeightDtype = "fp32" | "q8";
/** One dtype for every file, or one per ONNX file stem (`{encoder_model: "fp32", decoder_model_merged: "q8"}`). */
export type Dtype = WeightDtype | Record<string, WeightDtype>;
/** Execution device actually used by ONNX Runtime (see device.ts for `auto`). */
export type ExecDevice = "cpu" | "cuda" | "webgpu";

const SUFFIX: Record<WeightDtype, string> = { fp32: "", q8: "_quantized" };

export function isWeightDtype(x: unknown): x is WeightDtype {
  return x === "fp32" || x === "q8";
}

/** The dtype that applies to one ONNX file stem; a per-file map must name every file it is used for. */
export function dtypeFor(dtype: Dtype, stem: string): WeightDtype {
  if (typeof dtype === "string") {
    if (!isWeightDtype(dtype))
      throw new InferenceError("INVALID_INPUT", `unsupported dtype "${dtype}" (use fp32 or q8)`);
    return dtype;
  }
  const d = dtype[stem];
  if (!isWeightDtype(d)) {
    throw new InferenceError("INVALID_INPUT", `dtype map has no fp32/q8 entry for "${stem}": ${JSON.stringify(dtype)}`);
  }
  return d;
}

/** `onnx/<stem><suffix>.onnx` relative to the model folder. */
export function onnxFile(stem: string, dtype: Dtype): string {
  return `onnx/${stem}${SUFFIX[dtypeFor(dtype, stem)]}.onnx`;
}

/** Canonical text of a dtype, for cache keys and messages. */
export function dtypeKey(dtype: Dtype): string {
  if (typeof dtype === "string") return dtype;
  return Object.keys(dtype)
    .sort()
    .map((k) => `${k}=${dtype[k]}`)
    .join(",");
}
