/**
 * Errors thrown by the inference layer. Each carries a stable `code`; the service layer maps codes
 * to HTTP answers (e.g. `MODEL_NOT_INSTALLED` → 503). Nothing here knows about HTTP.
 */
export type InferenceErrorCode =
  /** The model folder, its config or the ONNX file for the requested dtype is missing. */
  | "MODEL_NOT_INSTALLED"
  /** The files are there but ONNX Runtime / transformers.js could not load them. */
  | "MODEL_LOAD_FAILED"
  /** A session ran and failed, or a worker died. */
  | "INFERENCE_FAILED"
  /** The caller passed something the model cannot take (wrong frame size, bad language...). */
  | "INVALID_INPUT"
  /** An explicitly requested execution provider (cuda, webgpu) does not load on this machine. */
  | "DEVICE_UNAVAILABLE";

export class InferenceError extends Error {
  constructor(
    readonly code: InferenceErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "InferenceError";
  }
}

export function isInferenceError(e: unknown): e is InferenceError {
  return e instanceof InferenceError;
}

/** Short, single-line text of an unknown thrown value (ORT messages can be long and nested). */
export function describeError(e: unknown, max = 600): string {
  const text = e instanceof Error ? e.message : String(e);
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length > max ? oneLine.slice(0, max) + "…" : oneLine;
}

/** Keep an InferenceError as is, wrap anything else with `code`. */
export function asInferenceError(e: unknown, code: InferenceErrorCode, context: string): InferenceError {
  if (e instanceof InferenceError) return e;
  return new InferenceError(code, `${context}: ${describeError(e)}`, { cause: e });
}
