/**
 * ONNX Runtime 1.30's POSIX telemetry (Microsoft's 1DS SDK, linked into libonnxruntime.so) opens
 * `/tmp/mat-debug-<pid>.log` when a process creates its first session, and writes nothing to it:
 * every vsearch process that loaded a model left an empty file in /tmp. The library's switch,
 * `ORT_DISABLE_TELEMETRY=1`, is read with the C library's getenv, which Bun's `process.env`
 * assignments do not reach (they do not call setenv): it works only in the environment the process
 * is started with (docs/OPERATIONS.md). Without it, the process removes its own file at exit — the
 * file of its own pid, only if it is still an empty regular file this user owns.
 */
import { lstatSync, unlinkSync } from "node:fs";

/** The file the 1DS SDK opens for this process (its temp folder is a fixed `/tmp/`). */
export const ortDebugLogPath = (): string => `/tmp/mat-debug-${process.pid}.log`;

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
    return false; // not there (no model was loaded, or the switch was set)
  }
}

let registered = false;

/** Registers the removal for this process's exit (once, however often called). */
export function removeOrtDebugLogAtExit(): void {
  if (registered) return;
  registered = true;
  process.once("exit", () => removeOwnOrtDebugLog());
}
