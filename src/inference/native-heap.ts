import { dlopen, FFIType } from "bun:ffi";

/**
 * Hands freed native memory back to the OS. ONNX Runtime allocates model weights and arenas with
 * glibc malloc inside the worker threads; when those threads end, glibc keeps the freed pages in
 * its arenas, so the process stays ~100 MB above where it started (measured: 225 MB after closing a
 * pool that held CLIP + Whisper, 136 MB after `malloc_trim(0)`). Without glibc (musl, other OSes)
 * this does nothing and says so.
 */
let trim: ((pad: number) => number) | null | undefined;

export function trimNativeHeap(): boolean {
  if (trim === undefined) {
    try {
      const libc = dlopen("libc.so.6", { malloc_trim: { args: [FFIType.u64], returns: FFIType.i32 } });
      trim = (pad) => libc.symbols.malloc_trim(pad) as number;
    } catch {
      trim = null;
    }
  }
  if (!trim) return false;
  trim(0);
  return true;
}
