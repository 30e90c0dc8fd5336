/** Helpers for the model tests: fixture paths, temp dirs, a real ONNX load check, tar files. */
import { createHash } from "node:crypto";
import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { InferenceSession } from "onnxruntime-node";
import { AppError } from "../../src/core/errors.ts";
import { onnxFilesFor } from "../../src/models/layout.ts";
import type { VerifyLoad } from "../../src/models/service.ts";

export const FIXTURE_MODELS = join(import.meta.dirname, "..", "fixtures", "models");
export const CLIP_SRC = join(FIXTURE_MODELS, "tiny-random-clip");
export const WHISPER_SRC = join(FIXTURE_MODELS, "tiny-random-whisper");

/** Temp dirs: the shared helper (test/helpers/temp.ts). */
export { tempDirs } from "../helpers/temp.ts";

/** A writable copy of a fixture model (the fixtures themselves are never modified). */
export function copyModel(src: string, dest: string): string {
  cpSync(src, dest, { recursive: true });
  return dest;
}

export const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** A real load: every ONNX graph the role needs at that dtype opened by ONNX Runtime, then released. */
export function ortVerifyLoad(calls: { dir: string; role: string; dtype: string }[] = []): VerifyLoad {
  return async (dir, role, dtype) => {
    calls.push({ dir, role, dtype });
    for (const f of onnxFilesFor(role, dtype)) {
      const session = await InferenceSession.create(join(dir, f));
      await session.release();
    }
  };
}

/** Runs the system `tar` (to build archives with a real, independent implementation). */
export function sysTar(args: string[]): void {
  const r = Bun.spawnSync(["tar", ...args], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`tar ${args.join(" ")}: ${r.stderr.toString()}`);
}

/** Awaits `p` and returns the AppError it rejects with (fails the test if it resolves). */
export async function appError(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AppError) return e;
    throw e;
  }
  throw new Error("expected an AppError, but the call succeeded");
}

/**
 * A hand-made ustar archive, independent of src/models/tar.ts, for entries a normal tar tool will
 * not produce (`../x`, absolute paths, links).
 */
export function rawTar(entries: { name: string; type?: string; data?: string; linkname?: string }[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const data = Buffer.from(e.data ?? "");
    const h = Buffer.alloc(512);
    h.write(e.name, 0, 100, "utf8");
    h.write("0000644\0", 100, 8, "ascii");
    h.write("0000000\0", 108, 8, "ascii");
    h.write("0000000\0", 116, 8, "ascii");
    h.write(data.length.toString(8).padStart(11, "0") + "\0", 124, 12, "ascii");
    h.write("00000000000\0", 136, 12, "ascii");
    h.fill(0x20, 148, 156);
    h.write(e.type ?? "0", 156, 1, "ascii");
    if (e.linkname) h.write(e.linkname, 157, 100, "utf8");
    h.write("ustar\0", 257, 6, "latin1");
    h.write("00", 263, 2, "ascii");
    let sum = 0;
    for (const b of h) sum += b;
    h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148, 8, "ascii");
    blocks.push(h, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}
