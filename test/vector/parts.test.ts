import { describe, expect, it } from "vitest";
import { gaussianSource, prng } from "../../bench/lib/synthetic.ts";
import { IdMap } from "../../src/vector/id-map.ts";
import { GroupIds } from "../../src/vector/partition.ts";
import { Rotation } from "../../src/vector/rotation.ts";
import { bestK, kthLargest, topIndices } from "../../src/vector/select.ts";

describe("IdMap", () => {
  it("agrees with a Map through random inserts, overwrites and deletes (incl. rehash)", () => {
    // Where the rows "live": each set gets a fresh (part, slot) whose key keyOf reads back.
    const home = new Map<number, number>();
    const m = new IdMap((p, s) => home.get(p * 100_000 + s)!, 16);
    const ref = new Map<number, [number, number]>();
    let next = 0;
    const r = prng(5);
    let mismatches = 0;
    for (let step = 0; step < 60_000; step++) {
      // Keys cluster in a small range so probe runs collide, plus a few huge safe integers.
      const key = r() % 7 === 0 ? 2 ** 52 + (r() % 500) : r() % 5000;
      const op = r() % 3;
      if (op < 2) {
        const v: [number, number] = [next % 100, Math.floor(next / 100)];
        next++;
        home.set(v[0] * 100_000 + v[1], key);
        m.set(key, v[0], v[1]);
        ref.set(key, v);
      } else if (m.delete(key) !== ref.delete(key)) {
        mismatches++;
      }
      if (step % 997 === 0) {
        if (m.size !== ref.size) mismatches++;
        for (const [k, [p, s]] of ref) {
          const b = m.find(k);
          if (b < 0 || m.partAt(b) !== p || m.slotAt(b) !== s) mismatches++;
        }
      }
    }
    for (let k = 0; k < 5000; k++) if (m.find(k) >= 0 !== ref.has(k)) mismatches++;
    expect(mismatches).toBe(0);
    expect(m.size).toBe(ref.size);
  });
});

describe("GroupIds", () => {
  it("hands out dense ids, counts rows and reuses ids of emptied groups", () => {
    const g = new GroupIds();
    const a = g.acquire(77),
      b = g.acquire(88);
    expect(g.acquire(77)).toBe(a);
    expect(g.rowCount(a)).toBe(2);
    g.release(b);
    expect(g.lookup(88)).toBeUndefined();
    expect(g.acquire(99)).toBe(b);
    expect(g.span).toBe(2);
  });
});

describe("selection", () => {
  it("topIndices returns the m largest (any order), ties filled first come first served", () => {
    const r = prng(9);
    for (const n of [1, 7, 100, 5000]) {
      const v = Float32Array.from({ length: n }, () => (r() % 50) / 7);
      for (const m of [0, 1, 3, n >> 1, n, n + 5]) {
        const out = new Int32Array(n),
          work = new Float32Array(n);
        const c = topIndices(v, n, m, out, work);
        expect(c).toBe(Math.min(m, n));
        const picked = Array.from(out.subarray(0, c), (i) => v[i]).sort((x, y) => y - x);
        const want = Array.from(v)
          .sort((x, y) => y - x)
          .slice(0, c);
        expect(picked).toEqual(want);
        expect(new Set(out.subarray(0, c)).size).toBe(c);
      }
    }
  });

  it("kthLargest on sorted, reversed and constant input", () => {
    const up = Float32Array.from({ length: 1000 }, (_, i) => i);
    expect(kthLargest(up.slice(), 1000, 0)).toBe(999);
    expect(kthLargest(up.slice().reverse(), 1000, 10)).toBe(989);
    expect(kthLargest(new Float32Array(50).fill(3), 50, 25)).toBe(3);
  });

  it("bestK orders by score, then rowId", () => {
    const got = bestK(
      [
        { rowId: 3, score: 0.5 },
        { rowId: 1, score: 0.9 },
        { rowId: 2, score: 0.5 },
      ],
      2,
    );
    expect(got).toEqual([
      { rowId: 1, score: 0.9 },
      { rowId: 2, score: 0.5 },
    ]);
  });

  it("bestK keeps the same k as a full sort when k is far below the list (tied scores included)", () => {
    const r = prng(27);
    for (const n of [25, 128, 400]) {
      for (const k of [1, 5, 10, 12, 32]) {
        const items = Array.from({ length: n }, () => ({ rowId: r() % 1000, score: (r() % 40) / 40 }));
        const want = [...items].sort((a, b) => b.score - a.score || a.rowId - b.rowId).slice(0, k);
        expect(bestK([...items], k)).toEqual(want);
      }
    }
  });
});

describe("Rotation", () => {
  it("is orthogonal (preserves dot products) and deterministic, with zero padding", () => {
    const rot = new Rotation(300, 512, 42);
    const g = gaussianSource(1);
    const x = new Float32Array(300),
      y = new Float32Array(300);
    g(x);
    g(y);
    const rx = new Float32Array(512),
      ry = new Float32Array(512);
    rot.apply(x, rx);
    rot.apply(y, ry);
    let d0 = 0,
      d1 = 0,
      n0 = 0,
      n1 = 0;
    for (let j = 0; j < 300; j++) (d0 += x[j] * y[j]), (n0 += x[j] * x[j]);
    for (let j = 0; j < 512; j++) (d1 += rx[j] * ry[j]), (n1 += rx[j] * rx[j]);
    expect(d1).toBeCloseTo(d0, 2);
    expect(n1).toBeCloseTo(n0, 2);
    const again = new Float32Array(512);
    new Rotation(300, 512, 42).apply(x, again);
    expect(again).toEqual(rx);
    // It mixes: a unit basis vector spreads over all coordinates.
    const e = new Float32Array(300);
    e[5] = 1;
    rot.apply(e, rx);
    expect(Math.max(...Array.from(rx, Math.abs))).toBeCloseTo(1 / Math.sqrt(512), 5);
  });
});
