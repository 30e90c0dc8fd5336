/**
 * Snapshots of the index (src/vector/snapshot.ts, issue 27): an index written out and loaded into
 * a new one must answer every search as the original did, hold the same rows and lists, and go on
 * working (adds, removes, retrains, compaction). A snapshot made by another layout, seed or
 * encoder, or one whose bytes disagree with its header, is refused before anything is used.
 */
import { describe, expect, it } from "vitest";
import { generateDataset, generateQueries } from "../../bench/lib/synthetic.ts";
import {
  type ByteSource,
  createMemoryVectorSource,
  createVectorIndex,
  type SearchOptions,
  type SegmentHeader,
  SnapshotMismatch,
  type VectorIndex,
  type VectorIndexOptions,
} from "../../src/vector/index.ts";
import { row } from "./helpers.ts";

const dim = 512;
const ds = generateDataset({ n: 12_000, dim, kind: "clustered", seed: 31, collections: 4, framesPerVideo: 120 });
const text = generateQueries(ds, 4, "text", 32);
const image = generateQueries(ds, 4, "image", 33);
const q = (Q: Float32Array, i: number) => Q.subarray(i * dim, (i + 1) * dim);

function build(opts: Partial<VectorIndexOptions> = {}, n = ds.n) {
  const source = createMemoryVectorSource();
  const idx = createVectorIndex({ dim, source, trainAt: 2048, ...opts });
  for (let i = 0; i < n; i += 2000) {
    const rows = [];
    for (let j = i; j < Math.min(n, i + 2000); j++) {
      source.set(1000 + j, row(ds, j));
      rows.push({
        rowId: 1000 + j,
        vector: row(ds, j),
        partition: j % 5 === 0 ? "small" : "acct",
        groupA: ds.collection[j],
        groupB: ds.video[j],
      });
    }
    idx.add(rows);
    idx.flushTraining();
  }
  return { idx, source };
}

/** The snapshot as bytes (headers as JSON, then the body), as a file would hold it. */
function write(idx: VectorIndex): { headers: SegmentHeader[]; body: Uint8Array } {
  const snap = idx.snapshot();
  const pieces: Uint8Array[] = [];
  for (const p of snap.body()) pieces.push(p.slice());
  expect(idx.version).toBe(snap.version);
  const body = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of pieces) {
    body.set(p, at);
    at += p.length;
  }
  return { headers: JSON.parse(JSON.stringify(snap.headers)), body };
}

function reader(body: Uint8Array): ByteSource & { at: number } {
  const r = Object.assign(
    (into: Uint8Array) => {
      if (r.at + into.length > body.length) throw new SnapshotMismatch("past the end");
      into.set(body.subarray(r.at, r.at + into.length));
      r.at += into.length;
    },
    { at: 0 },
  );
  return r;
}

function load(
  snap: { headers: SegmentHeader[]; body: Uint8Array },
  source: ReturnType<typeof createMemoryVectorSource>,
  opts: Partial<VectorIndexOptions> = {},
): VectorIndex {
  const idx = createVectorIndex({ dim, source, trainAt: 2048, ...opts });
  const read = reader(snap.body);
  let steps = 0;
  for (const _ of idx.restore(snap.headers, read)) steps++;
  expect(steps).toBeGreaterThan(1);
  expect(read.at).toBe(snap.body.length);
  return idx;
}

function answers(idx: VectorIndex): unknown[] {
  const variants: Partial<SearchOptions>[] = [
    {},
    { probe: 0.05 },
    { allow: { collections: [2] } },
    { allow: { videos: [ds.video[10], ds.video[5000]] } },
    { k: 60 },
  ];
  const out: unknown[] = [];
  for (const part of ["acct", "small"])
    for (const Q of [text, image])
      for (let i = 0; i < 4; i++)
        for (const v of variants) out.push(idx.search(q(Q, i), { partition: part, k: 10, ...v }));
  return out;
}

describe("index snapshot", () => {
  it("loads into a new index that answers every search as the original, with the same rows and lists", () => {
    const { idx, source } = build();
    expect(idx.listCount("acct")).toBeGreaterThan(1);
    const before = answers(idx);
    const snap = write(idx);
    const loaded = load(snap, source);
    expect(loaded.size).toBe(idx.size);
    expect(loaded.listCount("acct")).toBe(idx.listCount("acct"));
    expect(loaded.partitionSize("small")).toBe(idx.partitionSize("small"));
    expect(Array.from(loaded.center!)).toEqual(Array.from(idx.center!));
    expect(answers(loaded)).toEqual(before);
    const rows = (i: VectorIndex) => {
      const out: string[] = [];
      i.forEachRow((id, p, a, b) => out.push(`${id}:${p}:${a}:${b}`));
      return out.sort();
    };
    expect(rows(loaded)).toEqual(rows(idx));
    // Its memory is about the live bytes (laid out as a compaction would), not the original's high-water.
    expect(loaded.memoryBytes).toBeLessThanOrEqual(idx.memoryBytes * 1.2);
  });

  it("keeps working after loading: adds, removes, a retrain and a compaction", () => {
    const { idx, source } = build({}, 8000);
    const loaded = load(write(idx), source);
    const extra = [];
    for (let j = 8000; j < ds.n; j++) {
      source.set(1000 + j, row(ds, j));
      extra.push({
        rowId: 1000 + j,
        vector: row(ds, j),
        partition: "acct",
        groupA: ds.collection[j],
        groupB: ds.video[j],
      });
    }
    for (const i of [idx, loaded]) {
      i.add(extra);
      i.remove(Array.from({ length: 500 }, (_, k) => 1000 + k * 7));
      i.rebuild("acct");
      i.compact();
    }
    expect(loaded.size).toBe(idx.size);
    expect(answers(loaded)).toEqual(answers(idx));
  });

  it("loads an index of several segments and one whose centre is not learned yet", () => {
    const { idx, source } = build({ segmentBytes: 1 << 20 });
    expect(idx.segments).toBeGreaterThan(1);
    const loaded = load(write(idx), source, { segmentBytes: 1 << 20 });
    expect(loaded.segments).toBe(idx.segments);
    expect(answers(loaded)).toEqual(answers(idx));

    const tiny = build({}, 300);
    expect(tiny.idx.center).toBeNull();
    const tinyLoaded = load(write(tiny.idx), tiny.source);
    expect(tinyLoaded.center).toBeNull();
    expect(answers(tinyLoaded)).toEqual(answers(tiny.idx));
    // The centre is still learned from the first rows, as it would have been without the restart.
    const more = [];
    for (let j = 300; j < 1500; j++)
      more.push({
        rowId: 1000 + j,
        vector: row(ds, j),
        partition: "acct",
        groupA: ds.collection[j],
        groupB: ds.video[j],
      });
    for (const j of more) tiny.source.set(j.rowId, j.vector);
    tiny.idx.add(more);
    tinyLoaded.add(more);
    expect(Array.from(tinyLoaded.center!)).toEqual(Array.from(tiny.idx.center!));
  });

  it("refuses a snapshot of another seed, layout or format, and one whose body disagrees with its header", () => {
    const { idx, source } = build({}, 4000);
    const snap = write(idx);
    const refuse = (opts: Partial<VectorIndexOptions>, s: typeof snap, why: RegExp | typeof SnapshotMismatch) =>
      expect(() => load(s, source, opts)).toThrow(why);
    refuse({ seed: 7 }, snap, /seed/);
    refuse({ refineBits: 4 }, snap, /layout/);
    refuse({ chunkRows: 64 }, snap, /layout/);
    const future = structuredClone(snap);
    future.headers[0].format = 99;
    refuse({}, future, /format 99/);
    // The saved probe codes stand for the encoder: a snapshot whose codes differ is refused.
    const recoded = structuredClone(snap);
    recoded.headers[0].probeCodes[0] ^= 1;
    refuse({}, recoded, SnapshotMismatch);
    const lying = structuredClone(snap);
    lying.headers[0].partitions[0].listRows[0] += 1;
    refuse({}, lying, SnapshotMismatch);
    const short = { headers: snap.headers, body: snap.body.subarray(0, snap.body.length - 100) };
    expect(() => load(short, source)).toThrow(/past the end/);
  });

  it("says when a snapshot's body no longer matches the index (it changed while being written)", () => {
    const { idx, source } = build({}, 4000);
    const snap = idx.snapshot();
    source.set(999, row(ds, 0));
    idx.add([{ rowId: 999, vector: row(ds, 0), partition: "acct", groupA: 0, groupB: 0 }]);
    expect(idx.version).not.toBe(snap.version);
  });
});
