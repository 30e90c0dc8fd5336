/**
 * ONNX Runtime 1.30 has Microsoft's telemetry (the 1DS SDK, linked into libonnxruntime.so) on
 * Linux and macOS: each process that creates a session writes
 * `$HOME/.cache/Microsoft/DeveloperTools/.onnxruntime/{deviceid,onnxruntime.db,-wal,-shm}`,
 * `$TMPDIR/.ses` and an empty `$TMPDIR/mat-debug-<pid>.log`, and queues events for upload — on an
 * air-gapped appliance. The library's switch, `ORT_DISABLE_TELEMETRY=1`, is read with the C
 * library's getenv when the first session is created. Bun's `process.env` is a copy that never
 * calls setenv, so the product sets the switch in the C library's environment itself, through
 * bun:ffi, before any thread loads ONNX Runtime (prepareRuntime). The C environment is the
 * process's, so worker threads started later see it too; child processes started with Bun.spawn
 * get `process.env` (without it), and a vsearch child prepares its own runtime. (The library keeps
 * the telemetry off by itself where a CI service's variable such as `CI` is set, and writes under
 * `$XDG_CACHE_HOME` instead of `$HOME/.cache` when that is set: why a check of this on a CI machine
 * clears those first, test/runtime/ort-debug-log.test.ts.)
 */
import { dlopen, FFIType } from "bun:ffi";

export const ORT_TELEMETRY_SWITCH = "ORT_DISABLE_TELEMETRY";

interface CEnv {
  get: (name: string) => string | null;
  set: (name: string, value: string) => boolean;
}
let cEnv: CEnv | null | undefined;

/** A NUL-terminated copy of a string, as C wants it (kept alive by the caller for the call). */
const cString = (s: string): Buffer => Buffer.from(`${s}\0`, "utf8");

/** The C library of this platform, or null where it cannot be opened (bun:ffi missing, musl, …). */
function openCEnv(): CEnv | null {
  if (cEnv !== undefined) return cEnv;
  cEnv = null;
  const names = process.platform === "darwin" ? ["libSystem.B.dylib"] : ["libc.so.6"];
  for (const name of names) {
    try {
      const lib = dlopen(name, {
        getenv: { args: [FFIType.ptr], returns: FFIType.cstring },
        setenv: { args: [FFIType.ptr, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
      });
      cEnv = {
        get: (key) => {
          const value = lib.symbols.getenv(cString(key));
          return value === null ? null : String(value);
        },
        set: (key, value) => lib.symbols.setenv(cString(key), cString(value), 1) === 0,
      };
      break;
    } catch {
      // next name; none: the C environment is out of reach, and the start goes on without it
    }
  }
  return cEnv;
}

/** A variable as the C library (and so ONNX Runtime) sees it; undefined when that cannot be read. */
export function cEnvironmentValue(name: string): string | null | undefined {
  if (process.platform === "win32") return undefined;
  try {
    const c = openCEnv();
    return c ? c.get(name) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What became of the switch: `set` (the product set it), `operator` (it was in the start
 * environment with a value: theirs stands, even one that leaves telemetry on) or `unavailable`
 * (no C library to set it with: Windows, where ONNX Runtime's telemetry is ETW, or a failed
 * dlopen — the start goes on, and the exit hook in ort-debug-log.ts still removes the empty file).
 */
export type OrtTelemetrySwitch = "set" | "operator" | "unavailable";

/**
 * Sets `ORT_DISABLE_TELEMETRY=1` in the C environment unless the operator gave it a value (an
 * empty one counts as not given: the library treats it as "on", which nobody means by writing it).
 * Must run before the first ONNX Runtime session of the process. Never throws.
 */
export function switchOffOrtTelemetry(): OrtTelemetrySwitch {
  if (process.platform === "win32") return "unavailable";
  try {
    const c = openCEnv();
    if (!c) return "unavailable";
    const given = c.get(ORT_TELEMETRY_SWITCH);
    if (given !== null && given !== "") return "operator";
    return c.set(ORT_TELEMETRY_SWITCH, "1") ? "set" : "unavailable";
  } catch {
    return "unavailable";
  }
}
