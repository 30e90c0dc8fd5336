/**
 * The in-memory index's snapshot file (issue 27): `<data dir>/index/vectors.snap`.
 *
 *   "VSNAPSHT"  8 bytes
 *   format      u32 LE (SNAPSHOT_FILE_FORMAT)
 *   header      u32 LE length + that many bytes of JSON (the backend's: watermark, indexes,
 *               their segment headers — src/vector/snapshot.ts)
 *   body        the bytes the header describes
 *   trailer     "VSNAPEND" + u64 LE: wyhash of header and body, in 1 MiB blocks
 *
 * Written to a temporary file, flushed and renamed over the old one, so a crash mid-write leaves
 * the previous snapshot (or none), never half of one. Read back, nothing is trusted until the
 * trailer's hash matched every byte and every byte was consumed: the reader checks at `finish`,
 * and its caller drops whatever it built from the file if that throws.
 */
import { closeSync, fstatSync, fsyncSync, mkdirSync, openSync, readSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { SnapshotMismatch } from "../vector/index.ts";

export const SNAPSHOT_FILE_FORMAT = 1;
const MAGIC = new TextEncoder().encode("VSNAPSHT");
const END = new TextEncoder().encode("VSNAPEND");
/** A header larger than this is not a header of ours (the index's is a few MB at 10 M rows). */
const MAX_HEADER_BYTES = 256 * 1024 * 1024;
const BLOCK = 1 << 20;

/** wyhash over a byte stream in fixed 1 MiB blocks, whatever pieces it arrives in. */
class StreamHash {
  private h = 0n;
  private readonly buf = new Uint8Array(BLOCK);
  private fill = 0;

  feed(bytes: Uint8Array): void {
    let at = 0;
    while (at < bytes.length) {
      const n = Math.min(BLOCK - this.fill, bytes.length - at);
      this.buf.set(bytes.subarray(at, at + n), this.fill);
      this.fill += n;
      at += n;
      if (this.fill === BLOCK) {
        this.h = BigInt(Bun.hash.wyhash(this.buf, this.h));
        this.fill = 0;
      }
    }
  }

  digest(): bigint {
    return BigInt(Bun.hash.wyhash(this.buf.subarray(0, this.fill), this.h));
  }
}

export interface SnapshotWrite {
  /** Writes the next piece; false once all are written (then `commit`). */
  step(): boolean;
  /** Flushes and renames the file into place. */
  commit(): void;
  /** Removes the temporary file (a write given up). */
  abort(): void;
}

/**
 * Starts writing `header` and `body` to `path` (through `path.tmp`). Each `step` writes one piece
 * of the body; the caller decides how many per event-loop turn and gives up (abort) when what the
 * body reads changed meanwhile.
 */
export function writeSnapshotFile(path: string, header: unknown, body: Iterator<Uint8Array>): SnapshotWrite {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, "w");
  const hash = new StreamHash();
  let closed = false;
  const put = (bytes: Uint8Array, hashed = true) => {
    if (hashed) hash.feed(bytes);
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
  };
  const close = () => {
    if (!closed) closeSync(fd);
    closed = true;
  };
  try {
    const json = new TextEncoder().encode(JSON.stringify(header));
    const head = new Uint8Array(16);
    head.set(MAGIC);
    const dv = new DataView(head.buffer);
    dv.setUint32(8, SNAPSHOT_FILE_FORMAT, true);
    dv.setUint32(12, json.length, true);
    put(head.subarray(0, 8), false);
    put(head.subarray(8));
    put(json);
  } catch (e) {
    close();
    rmSync(tmp, { force: true });
    throw e;
  }
  return {
    step() {
      const next = body.next();
      if (next.done) return false;
      put(next.value);
      return true;
    },
    commit() {
      const tail = new Uint8Array(16);
      tail.set(END);
      new DataView(tail.buffer).setBigUint64(8, hash.digest(), true);
      put(tail, false);
      fsyncSync(fd);
      close();
      renameSync(tmp, path);
    },
    abort() {
      close();
      rmSync(tmp, { force: true });
    },
  };
}

export interface SnapshotRead {
  header: unknown;
  /** Body bytes still unread (the loader checks its header's sizes against it before allocating). */
  readonly bodyBytes: number;
  /** Reads the next body bytes into `into` (throws SnapshotMismatch past the body's end). */
  read(into: Uint8Array): void;
  /** Checks that the body was read to its end and that the hash matches; closes the file. */
  finish(): void;
  close(): void;
}

/** Opens a snapshot file and reads its header; throws SnapshotMismatch for anything not a whole snapshot of this format. */
export function openSnapshotFile(path: string): SnapshotRead {
  const fd = openSync(path, "r");
  let closed = false;
  const close = () => {
    if (!closed) closeSync(fd);
    closed = true;
  };
  try {
    const size = fstatSync(fd).size;
    let pos = 0;
    const hash = new StreamHash();
    const readAt = (into: Uint8Array, hashed = true) => {
      for (let at = 0; at < into.length; ) {
        const n = readSync(fd, into, at, into.length - at, pos);
        if (n <= 0) throw new SnapshotMismatch("the file ends early");
        at += n;
        pos += n;
      }
      if (hashed) hash.feed(into);
    };
    if (size < 32) throw new SnapshotMismatch("too short to be a snapshot");
    const head = new Uint8Array(16);
    readAt(head.subarray(0, 8), false);
    readAt(head.subarray(8));
    if (MAGIC.some((b, i) => head[i] !== b)) throw new SnapshotMismatch("not a snapshot file");
    const dv = new DataView(head.buffer);
    const format = dv.getUint32(8, true);
    if (format !== SNAPSHOT_FILE_FORMAT)
      throw new SnapshotMismatch(`file format ${format}, this build reads ${SNAPSHOT_FILE_FORMAT}`);
    const len = dv.getUint32(12, true);
    if (len > MAX_HEADER_BYTES || 16 + len + 16 > size) throw new SnapshotMismatch("header length out of range");
    const json = new Uint8Array(len);
    readAt(json);
    let header: unknown;
    try {
      header = JSON.parse(new TextDecoder().decode(json));
    } catch {
      throw new SnapshotMismatch("header is not JSON");
    }
    const bodyEnd = size - 16;
    return {
      header,
      get bodyBytes() {
        return bodyEnd - pos;
      },
      read(into) {
        if (pos + into.length > bodyEnd) throw new SnapshotMismatch("the body is shorter than its header says");
        readAt(into);
      },
      finish() {
        if (pos !== bodyEnd) throw new SnapshotMismatch(`${bodyEnd - pos} bytes of the body were not read`);
        const tail = new Uint8Array(16);
        readAt(tail, false);
        if (END.some((b, i) => tail[i] !== b)) throw new SnapshotMismatch("no end marker");
        if (new DataView(tail.buffer).getBigUint64(8, true) !== hash.digest())
          throw new SnapshotMismatch("the hash does not match (a damaged file)");
        close();
      },
      close,
    };
  } catch (e) {
    close();
    throw e;
  }
}
