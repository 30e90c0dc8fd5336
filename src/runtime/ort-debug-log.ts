/**
 * ONNX Runtime 1.30's POSIX telemetry (src/runtime/ort-telemetry.ts) opens
 * `$TMPDIR/mat-debug-<pid>.log` when a process creates its first session, and writes nothing to it.
 * prepareRuntime switches that telemetry off, so the file is made only where the switch could not
 * be set (no C library reachable through bun:ffi) or the operator set `ORT_DISABLE_TELEMETRY` to a
 * value that leaves it on. For those, the process removes its own file at exit — the file of its
 * own pid, only if it is still an empty regular file this user owns.
 */
import { lstatSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cEnvironmentValue } from "./ort-telemetry.ts";

/**
 * The file the 1DS SDK opens for this process: in the TMPDIR of the C environment (the one it reads),
 * `/tmp` without one; where the C environment cannot be read, in the folder Node's tmpdir() names.
 */
export function ortDebugLogPath(): string {
  const fromC = cEnvironmentValue("TMPDIR");
  const dir = fromC === undefined ? tmpdir() : fromC || "/tmp";
  return join(dir, `mat-debug-${process.pid}.log`);
}

/** Removes this process's `mat-debug` file if it is there, empty and ours; true when it did. */
export function removeOwnOrtDebugLog(): boolean {
  if (process.platform === "win32") return false; // ONNX Runtime's telemetry there is ETW: no such file
  const path = ortDebugLogPath();
  try {
    const st = lstatSync(path);
    if (!st.isFile() || st.size !== 0 || st.uid !== process.getuid?.()) return false;
    unlinkSync(path);
    return true;
  } catch {
    return false; // not there (no model was loaded, or the telemetry was off)
  }
}

let registered = false;

/** Registers the removal for this process's exit (once, however often called). */
export function removeOrtDebugLogAtExit(): void {
  if (registered) return;
  registered = true;
  process.once("exit", () => removeOwnOrtDebugLog());
}
