/**
 * The index's one WebAssembly memory, carved into fixed-size blocks (two sizes: the scan and
 * side blocks of a chunk) plus one contiguous scratch run for per-query buffers.
 *
 * Fixed sizes keep allocation trivial (a free list per size) and mean growth never moves data:
 * a new chunk is a free block or memory.grow. A WebAssembly memory cannot shrink, so freed blocks are
 * reused; to give memory back, the index lays its live blocks out in a fresh, smaller arena
 * (compact.ts) and this arena then `adopt`s that one's memory, the old one being left to the GC.
 * Typed-array views are re-created whenever the buffer changes (memory.grow detaches the old
 * ArrayBuffer; adopt replaces it).
 */

const PAGE = 65536;
/** Offset 0 is left unused so that no live pointer is 0. */
const FIRST = 64;

export class Arena {
  private mem: WebAssembly.Memory;
  private top = FIRST;
  /** Free blocks by block size. */
  private free = new Map<number, number[]>();
  private buffer: ArrayBuffer;
  u8!: Uint8Array;
  u16!: Uint16Array;
  i16!: Int16Array;
  i32!: Int32Array;
  u32!: Uint32Array;
  f32!: Float32Array;

  /**
   * `blockSizes`: the block sizes in use (each a multiple of 64), largest first. `initialBytes`:
   * the memory's first size (a compaction sizes its fresh arena to the live data plus headroom).
   */
  constructor(
    readonly blockSizes: readonly number[],
    initialBytes = 4 * PAGE,
  ) {
    for (const b of blockSizes) {
      if (b % 64 || b <= 0) throw new RangeError("block sizes must be positive multiples of 64");
      this.free.set(b, []);
    }
    this.mem = new WebAssembly.Memory({ initial: Math.max(4, Math.ceil(initialBytes / PAGE)) });
    this.buffer = this.mem.buffer;
    this.refresh();
  }

  /** The WebAssembly memory (a different one after `adopt`: kernels must be re-instantiated). */
  get memory(): WebAssembly.Memory {
    return this.mem;
  }

  /**
   * Takes over `fresh`'s memory and allocation state (a compaction's result); this arena's old
   * memory is no longer referenced from here, so the GC can free it. `fresh` must not be used after.
   */
  adopt(fresh: Arena): void {
    if (fresh.blockSizes.join() !== this.blockSizes.join()) throw new RangeError("adopt: block sizes differ");
    this.mem = fresh.mem;
    this.top = fresh.top;
    this.free = fresh.free;
    this.wholeRuns = fresh.wholeRuns;
    this.buffer = this.mem.buffer;
    this.refresh();
  }

  /** Views on the current buffer; call before touching memory after anything that may grow it. */
  views(): this {
    if (this.mem.buffer !== this.buffer) {
      this.buffer = this.mem.buffer;
      this.refresh();
    }
    return this;
  }

  private refresh(): void {
    const b = this.buffer;
    this.u8 = new Uint8Array(b);
    this.u16 = new Uint16Array(b);
    this.i16 = new Int16Array(b);
    this.i32 = new Int32Array(b);
    this.u32 = new Uint32Array(b);
    this.f32 = new Float32Array(b);
  }

  /** Grows the memory so that [0, end) is addressable; grows by ≥ 1/8 to amortise. */
  private ensure(end: number): void {
    const have = this.mem.buffer.byteLength;
    if (end <= have) return;
    const want = Math.max(end, have + (have >>> 3));
    this.mem.grow(Math.ceil((want - have) / PAGE));
    this.views();
  }

  allocBlock(bytes: number): number {
    const list = this.free.get(bytes);
    if (!list) throw new RangeError(`no block size ${bytes}`);
    const reused = list.pop();
    if (reused !== undefined) return reused;
    const off = this.top;
    this.ensure(off + bytes);
    this.top += bytes;
    return off;
  }

  /** A free block of this size, if any (no growth). */
  takeFree(bytes: number): number | undefined {
    return this.free.get(bytes)!.pop();
  }

  /**
   * `count` adjacent blocks of `bytes`: a run of free blocks if there is one (a rebuild frees the
   * previous layout's runs, so rebuilding again does not grow the memory), else from the top.
   */
  allocContiguous(bytes: number, count: number): number {
    const list = this.free.get(bytes);
    if (list && count > 1 && list.length >= count) {
      list.sort((x, y) => y - x); // descending: pop() stays "lowest address first"
      for (let i = list.length - 1; i - count + 1 >= 0; i--) {
        // list[i] is the lowest of list[i − count + 1 … i] (descending order)
        if (list[i - count + 1] - list[i] === (count - 1) * bytes) {
          const first = list[i];
          list.splice(i - count + 1, count);
          return first;
        }
      }
    }
    const off = this.top;
    this.ensure(off + bytes * count);
    this.top += bytes * count;
    return off;
  }

  freeBlock(off: number, bytes: number): void {
    this.free.get(bytes)!.push(off);
  }

  /** Runs given back whole (keepWhole), by size: list centroids of the same count fit again. */
  private wholeRuns = new Map<number, number[]>();

  /** A contiguous run (scratch, centroids), rounded up to 64 KiB: a kept run of that size, else from the top. */
  allocRun(bytes: number): { off: number; bytes: number } {
    const size = Math.ceil(bytes / PAGE) * PAGE;
    const kept = this.wholeRuns.get(size)?.pop();
    if (kept !== undefined) return { off: kept, bytes: size };
    const off = this.top;
    this.ensure(off + size);
    this.top += size;
    return { off, bytes: size };
  }

  /** Cuts a run that is no longer needed into blocks for reuse (a remainder below the smallest is lost). */
  freeRun(run: { off: number; bytes: number }, keepWhole = false): void {
    if (keepWhole) {
      let list = this.wholeRuns.get(run.bytes);
      if (!list) this.wholeRuns.set(run.bytes, (list = []));
      list.push(run.off);
      return;
    }
    let off = run.off;
    const end = run.off + run.bytes;
    for (const size of this.blockSizes) {
      for (; off + size <= end; off += size) this.free.get(size)!.push(off);
    }
  }

  /** Bytes handed out and not given back (free blocks and kept runs subtracted). */
  get usedBytes(): number {
    let free = 0;
    for (const [size, list] of this.free) free += size * list.length;
    for (const [size, list] of this.wholeRuns) free += size * list.length;
    return this.top - free;
  }

  get byteLength(): number {
    return this.mem.buffer.byteLength;
  }

  /** End of the bytes ever handed out (the rest of the memory is untouched headroom). */
  get topBytes(): number {
    return this.top;
  }
}
