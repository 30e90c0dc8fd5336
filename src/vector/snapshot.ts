/**
 * Snapshots of one segment (issue 27: a restart loads the built index instead of re-encoding and
 * retraining every row). A snapshot is the segment's live data in the order a compaction lays it
 * out (compact.ts) — per partition its scan blocks in list order, then its side blocks, its rows'
 * ids, its list centroids — plus a JSON header with everything else (layout, rotation seed,
 * centre, lists, group tables). Loading reads the blocks straight into a fresh WebAssembly memory
 * and rebuilds the JS-side tables (id map, group ids, per-list collection counts) from them.
 *
 * What is checked before anything is trusted: the format number; the layout (dims, refine bits,
 * chunk rows, block sizes) and rotation seed of the index loading it; a fixed probe vector
 * encoded with the saved centre must give the bytes saved beside it (any change to the rotation
 * or the encoding since the snapshot was written fails this); sizes against the header. The
 * caller (search/index-snapshot.ts) adds a hash of every byte and a watermark.
 *
 * Writing and loading are generators of steps, so the caller can run them between event-loop
 * turns; a writer must be given up once the segment changed (its `version` moved).
 */
import type { Arena } from "./arena.ts";
import type { Encoder } from "./encode.ts";
import type { Layout } from "./layout.ts";
import { List, Partition, type Centroids } from "./partition.ts";
import type { RowStore } from "./rows.ts";

/** Bumped whenever the bytes a snapshot holds would mean something else to the loading code. */
export const SEGMENT_SNAPSHOT_FORMAT = 1;

/** Chunks copied per step (a few MB: a step is a few ms). */
const STEP_CHUNKS = 1024;

interface GroupTable {
  values: number[];
  counts: number[];
}

interface PartitionHeader {
  name: string;
  n: number;
  /** Rows and chunks per list, in list order (chunks are renumbered 0… in that order on load). */
  listRows: number[];
  listChunks: number[];
  groupA: GroupTable;
  groupB: GroupTable;
  centroids: {
    count: number;
    groups: number;
    trainedAt: number;
    runBytes: number;
    /** Offsets of the fine i16, coarse i16 and sums regions inside the run. */
    atOff: number;
    coarseOff: number;
    sumsOff: number;
  } | null;
}

export interface SegmentHeader {
  format: number;
  layout: Pick<Layout, "dim" | "padDim" | "refineBits" | "chunkRows" | "scanBlockBytes" | "sideBlockBytes">;
  seed: number;
  center: number[] | null;
  /** Rows kept for learning the centre (only before it is learned). */
  centerSample: number[];
  /** The probe vector's codes under this segment's encoder (scan block row 0, then side block row 0). */
  probeCodes: number[];
  partitions: PartitionHeader[];
}

/** What a segment hands the snapshot code (vector-index.ts). */
export interface SegmentParts {
  layout: Layout;
  arena: Arena;
  rows: RowStore;
  encoder: Encoder;
  seed: number;
}

/** A fixed vector whose codes prove the encoder unchanged (deterministic, dim-sized). */
function probeVector(dim: number): Float32Array {
  const v = new Float32Array(dim);
  let s = 0x9e3779b9;
  for (let j = 0; j < dim; j++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    v[j] = ((s >>> 0) / 4294967296 - 0.5) * (1 + (j % 7));
  }
  return v;
}

/** The probe vector's scan and side bytes of row 0 under the encoder's current centre. */
function probeCodes(parts: SegmentParts): number[] {
  const { layout: L, arena, encoder } = parts;
  const scan = arena.allocBlock(L.scanBlockBytes),
    side = arena.allocBlock(L.sideBlockBytes);
  try {
    const a = arena.views();
    a.u8.fill(0, scan, scan + L.scanBlockBytes);
    a.u8.fill(0, side, side + L.sideBlockBytes);
    encoder.encodeRow(probeVector(L.dim), arena.views(), scan, side, 0);
    const u8 = arena.views().u8;
    const out: number[] = [];
    // Row 0's bytes: its code and factor in the scan block, its refine bits and scale in the side block.
    for (let b = 0; b < L.codeBytes; b++) out.push(u8[scan + L.offCodes + b]);
    out.push(u8[scan + L.offFactor], u8[scan + L.offFactor + 1]);
    for (let b = 0; b < L.refineBytes; b++) out.push(u8[side + L.offRefine + b]);
    for (let b = 0; b < 4; b++) out.push(u8[side + L.offScale + b]);
    return out;
  } finally {
    arena.freeBlock(scan, L.scanBlockBytes);
    arena.freeBlock(side, L.sideBlockBytes);
  }
}

/** The header of a segment as it is now (its blocks follow in `writeSegment`'s order). */
export function segmentHeader(parts: SegmentParts): SegmentHeader {
  const { layout: L, rows } = parts;
  const sample = rows.centerSampleRows;
  const partitions: PartitionHeader[] = [];
  for (const p of rows.allPartitions) {
    if (p.target) throw new Error(`snapshot: partition ${p.name} is being retrained`);
    const c = p.centroids;
    partitions.push({
      name: p.name,
      n: p.n,
      listRows: p.lists.map((l) => l.n),
      listChunks: p.lists.map((l) => l.chunks.length),
      groupA: p.groupA.toTable(),
      groupB: p.groupB.toTable(),
      centroids: c
        ? {
            count: c.count,
            groups: c.groups,
            trainedAt: c.trainedAt,
            runBytes: c.runBytes,
            atOff: c.at - c.run,
            coarseOff: c.coarseAt - c.run,
            sumsOff: c.sumsAt - c.run,
          }
        : null,
    });
  }
  return {
    format: SEGMENT_SNAPSHOT_FORMAT,
    layout: {
      dim: L.dim,
      padDim: L.padDim,
      refineBits: L.refineBits,
      chunkRows: L.chunkRows,
      scanBlockBytes: L.scanBlockBytes,
      sideBlockBytes: L.sideBlockBytes,
    },
    seed: parts.seed,
    center: rows.center ? Array.from(rows.center) : null,
    centerSample: sample ? [...sample.keys()] : [],
    probeCodes: probeCodes(parts),
    partitions,
  };
}

/**
 * The segment's bytes after its header, in pieces (views of the arena, or small copies), per
 * partition: scan blocks in list order, side blocks in the same order, row ids (f64) in list
 * order, the centroid run, the per-centroid scales (f32 ×4) and group starts (i32); then the
 * centre sample's vectors. Each piece is valid until the next is asked for (the arena may grow).
 */
export function* segmentBody(parts: SegmentParts, header: SegmentHeader): Generator<Uint8Array, void> {
  const { layout: L, arena, rows } = parts;
  for (const ph of header.partitions) {
    const p = rows.partition(ph.name);
    if (!p) throw new Error(`snapshot: partition ${ph.name} went away`);
    for (const [blocks, size] of [
      [p.scanBlocks, L.scanBlockBytes],
      [p.sideBlocks, L.sideBlockBytes],
    ] as const) {
      const buf = new Uint8Array(STEP_CHUNKS * size);
      let fill = 0;
      for (const l of p.lists) {
        for (const c of l.chunks) {
          const at = blocks[c];
          buf.set(arena.views().u8.subarray(at, at + size), fill * size);
          if (++fill === STEP_CHUNKS) {
            yield buf;
            fill = 0;
          }
        }
      }
      if (fill) yield buf.subarray(0, fill * size);
    }
    const ids = new Float64Array(p.n);
    let k = 0;
    for (const l of p.lists) for (let pos = 0; pos < l.n; pos++) ids[k++] = p.rowIds[p.slotOf(l, pos)];
    yield new Uint8Array(ids.buffer);
    const c = p.centroids;
    if (c) {
      yield arena.views().u8.slice(c.run, c.run + c.runBytes);
      for (const a of [c.sum16, c.invScale, c.coarseSum16, c.coarseInvScale])
        yield new Uint8Array(Float32Array.from(a).buffer);
      yield new Uint8Array(Int32Array.from(c.groupStart).buffer);
    }
  }
  const sample = rows.centerSampleRows;
  if (sample) for (const id of header.centerSample) yield new Uint8Array(Float32Array.from(sample.get(id)!).buffer);
}

/** The bytes of a segment's body as its header describes them (checked against a file's size before anything is allocated). */
export function segmentBodyBytes(h: SegmentHeader): number {
  let n = 0;
  for (const p of h.partitions) {
    const chunks = p.listChunks.reduce((a, b) => a + b, 0);
    n += chunks * (h.layout.scanBlockBytes + h.layout.sideBlockBytes) + p.n * 8;
    const c = p.centroids;
    if (c) n += c.runBytes + c.count * 8 + c.groups * 8 + (c.groups + 1) * 4;
  }
  if (!h.center) n += h.centerSample.length * h.layout.dim * 4;
  return n;
}

/** Reads exactly `into.length` bytes of the snapshot (the caller hashes and bounds them). */
export type ByteSource = (into: Uint8Array) => void;

/** Why a snapshot was not used (the caller logs it and rebuilds from the store). */
export class SnapshotMismatch extends Error {}

/** Checks a header against the segment that would load it (before any byte of its body is read). */
export function checkHeader(parts: SegmentParts, h: SegmentHeader): void {
  const L = parts.layout;
  if (h.format !== SEGMENT_SNAPSHOT_FORMAT)
    throw new SnapshotMismatch(`segment format ${h.format}, this build reads ${SEGMENT_SNAPSHOT_FORMAT}`);
  for (const k of ["dim", "padDim", "refineBits", "chunkRows", "scanBlockBytes", "sideBlockBytes"] as const)
    if (h.layout[k] !== L[k]) throw new SnapshotMismatch(`layout ${k} ${h.layout[k]}, the index has ${L[k]}`);
  if (h.seed !== parts.seed) throw new SnapshotMismatch(`rotation seed ${h.seed}, the index has ${parts.seed}`);
  if (h.center && h.center.length !== L.dim) throw new SnapshotMismatch("centre of the wrong size");
  for (const p of h.partitions) {
    if (p.listRows.length !== p.listChunks.length)
      throw new SnapshotMismatch(`partition ${p.name}: list tables differ`);
    let n = 0;
    for (let i = 0; i < p.listRows.length; i++) {
      const rowsIn = p.listRows[i],
        chunks = p.listChunks[i];
      // Every chunk of a list but its last is full, and the last holds at least one row.
      if (!(rowsIn >= 0) || chunks !== Math.ceil(rowsIn / L.chunkRows))
        throw new SnapshotMismatch(`partition ${p.name}: list ${i} has ${rowsIn} rows in ${chunks} chunks`);
      n += rowsIn;
    }
    if (n !== p.n) throw new SnapshotMismatch(`partition ${p.name}: ${n} rows in its lists, ${p.n} said`);
  }
}

/**
 * Loads a segment's body (after `checkHeader`) into `parts` — a segment just created, holding no
 * rows — a partition per step group, yielding between chunks of work. On any error the segment
 * is to be dropped by the caller (it may hold part of the rows).
 */
export function* loadSegment(parts: SegmentParts, h: SegmentHeader, read: ByteSource): Generator<void, void> {
  const { layout: L, arena, rows } = parts;
  for (const ph of h.partitions) {
    const chunks = ph.listChunks.reduce((a, b) => a + b, 0);
    const scanRun = chunks ? arena.allocContiguous(L.scanBlockBytes, chunks) : 0;
    const sideRun = chunks ? arena.allocContiguous(L.sideBlockBytes, chunks) : 0;
    for (const [run, size] of [
      [scanRun, L.scanBlockBytes],
      [sideRun, L.sideBlockBytes],
    ] as const) {
      for (let c = 0; c < chunks; c += STEP_CHUNKS) {
        const m = Math.min(STEP_CHUNKS, chunks - c);
        read(arena.views().u8.subarray(run + c * size, run + (c + m) * size));
        yield;
      }
    }
    const ids = new Float64Array(ph.n);
    read(new Uint8Array(ids.buffer));
    let cent: Centroids | null = null;
    if (ph.centroids) {
      const hc = ph.centroids;
      const run = arena.allocRun(hc.runBytes);
      if (run.bytes !== hc.runBytes) throw new SnapshotMismatch("centroid run size");
      read(arena.views().u8.subarray(run.off, run.off + run.bytes));
      const f32 = (n: number) => {
        const a = new Float32Array(n);
        read(new Uint8Array(a.buffer));
        return a;
      };
      const sum16 = f32(hc.count),
        invScale = f32(hc.count),
        coarseSum16 = f32(hc.groups),
        coarseInvScale = f32(hc.groups);
      const groupStart = new Int32Array(hc.groups + 1);
      read(new Uint8Array(groupStart.buffer));
      if (groupStart[hc.groups] !== hc.count || ph.listRows.length !== hc.count)
        throw new SnapshotMismatch(`partition ${ph.name}: ${ph.listRows.length} lists for ${hc.count} centroids`);
      cent = {
        count: hc.count,
        groups: hc.groups,
        groupStart,
        trainedAt: hc.trainedAt,
        run: run.off,
        runBytes: run.bytes,
        at: run.off + hc.atOff,
        coarseAt: run.off + hc.coarseOff,
        sumsAt: run.off + hc.sumsOff,
        sum16,
        invScale,
        coarseSum16,
        coarseInvScale,
      };
    } else if (ph.listRows.length !== 1) {
      throw new SnapshotMismatch(`partition ${ph.name}: ${ph.listRows.length} lists without centroids`);
    }
    rows.adoptPartition((id) => {
      const p = new Partition(id, ph.name, L.chunkRows);
      p.lists = [];
      p.rowIds = new Float64Array(Math.max(L.chunkRows, chunks * L.chunkRows));
      const a = arena.views();
      let chunk = 0,
        k = 0;
      for (let li = 0; li < ph.listRows.length; li++) {
        const l = new List();
        l.n = ph.listRows[li];
        for (let j = 0; j < ph.listChunks[li]; j++, chunk++) {
          l.chunks.push(chunk);
          p.scanBlocks[chunk] = scanRun + chunk * L.scanBlockBytes;
          p.sideBlocks[chunk] = sideRun + chunk * L.sideBlockBytes;
          p.chunkList[chunk] = li;
        }
        for (let pos = 0; pos < l.n; pos++) {
          const slot = p.slotOf(l, pos);
          p.rowIds[slot] = ids[k++];
          const side = p.sideBlocks[slot >> p.chunkShift],
            r = slot & (L.chunkRows - 1);
          const gA = a.i32[(side + L.offGroupA) / 4 + r],
            gB = a.i32[(side + L.offGroupB) / 4 + r];
          if (!(gA >= 0 && gA < ph.groupA.values.length && gB >= 0 && gB < ph.groupB.values.length))
            throw new SnapshotMismatch(`partition ${ph.name}: a row's group ids are out of range`);
          l.addA(gA, 1);
        }
        // The rows past the list's end in its last chunk: group ids 0, as appendChunk leaves them.
        p.lists.push(l);
      }
      p.groupA.restoreTable(ph.groupA);
      p.groupB.restoreTable(ph.groupB);
      p.n = ph.n;
      p.centroids = cent;
      return p;
    });
    yield;
  }
  if (h.center) {
    rows.restoreCenter(Float32Array.from(h.center), null);
  } else {
    const sample = new Map<number, Float32Array>();
    for (const id of h.centerSample) {
      const v = new Float32Array(L.dim);
      read(new Uint8Array(v.buffer));
      sample.set(id, v);
    }
    rows.restoreCenter(null, sample);
  }
  // The codes saved must be what this build's encoder makes with the saved centre.
  const now = probeCodes(parts);
  if (now.length !== h.probeCodes.length || now.some((b, i) => b !== h.probeCodes[i]))
    throw new SnapshotMismatch("the encoder gives other codes than the snapshot's (rotation or encoding changed)");
}
