import { describe, expect, it } from "vitest";
import { RowDots } from "../../src/vector/wasm/row-dots.ts";
import { RowSlab } from "../../src/vector/wasm/row-slab.ts";

/** A seeded generator: the same rows every run. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

const f64dot = (a: Float32Array, b: Float32Array) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};

describe("RowDots (SIMD dot products for calibration and rescoring)", () => {
  // Dimensions that exercise every loop of the kernel: steps of 16, of 4, and the scalar tail.
  for (const dim of [1, 3, 4, 15, 16, 17, 20, 512, 768]) {
    it(`matches float64 sums at dim ${dim}, with and without norms`, () => {
      const next = rng(dim);
      const n = 37;
      const rows = Array.from({ length: n }, () => Float32Array.from({ length: dim }, next));
      const q = Float32Array.from({ length: dim }, next);
      const rd = new RowDots(dim, 4); // smaller than n: load must grow it
      rd.load(rows);
      const plain = Float32Array.from(rd.dots(q, n).dots);
      const { dots, norms } = rd.dots(q, n, true);
      for (let i = 0; i < n; i++) {
        const want = f64dot(q, rows[i]);
        // float32 sums of dim products of values in ±0.5: well inside 1e-5 · dim.
        expect(Math.abs(dots[i] - want)).toBeLessThan(1e-5 * Math.max(1, dim / 16));
        expect(plain[i]).toBe(dots[i]); // both kernels sum the products in the same order
        expect(Math.abs(norms[i] - f64dot(rows[i], rows[i]))).toBeLessThan(1e-5 * Math.max(1, dim / 16));
      }
    });
  }

  it("answers only the first n rows, keeps rows written through `rows`, and refuses a query of another size", () => {
    const rd = new RowDots(8, 3);
    rd.rows.set([1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0]);
    const q = Float32Array.from([1, 1, 1, 1, 0, 0, 0, 0]);
    expect([...rd.dots(q, 3).dots]).toEqual([1, 2, 3]);
    expect([...rd.dots(q, 2).dots]).toEqual([1, 2]);
    expect(() => rd.dots(new Float32Array(7), 1)).toThrow(/7 dimensions/);
    expect(() => rd.dots(q, 4)).toThrow(/room for 3/);
  });
});

describe("RowSlab (rows kept in place, compared without a copy)", () => {
  for (const dim of [3, 17, 512]) {
    it(`gives the bits of copying the rows into RowDots at dim ${dim}, whatever the slots' order`, () => {
      const next = rng(dim + 1);
      const n = 700; // more than one kernel block (512), and the memory grows on the way
      const rows = Array.from({ length: n }, () => Float32Array.from({ length: dim }, next));
      const q = Float32Array.from({ length: dim }, next);
      const slab = new RowSlab(dim);
      const slots = rows.map((r) => {
        const s = slab.alloc();
        slab.write(s, r);
        return s;
      });
      // Compared in reverse slot order: each answer is its own row's.
      const order = [...slots.keys()].reverse();
      const cos = new Float64Array(n);
      slab.cosines(
        q,
        order.map((i) => slots[i]),
        n,
        cos,
      );
      const rd = new RowDots(dim, n);
      rd.load(order.map((i) => rows[i]));
      const { dots, norms } = rd.dots(q, n, true);
      for (let j = 0; j < n; j++) expect(cos[j]).toBe(norms[j] > 0 ? dots[j] / Math.sqrt(norms[j]) : 0);
      expect(slab.read(slots[5])).toEqual(rows[5]);
    });
  }

  it("reuses released slots, scores a zero row 0, and refuses rows or queries of another size", () => {
    const slab = new RowSlab(4);
    const a = slab.alloc();
    const b = slab.alloc();
    slab.write(a, Float32Array.from([3, 4, 0, 0]));
    slab.write(b, new Float32Array(4));
    const cos = new Float64Array(2);
    slab.cosines(Float32Array.from([1, 0, 0, 0]), [a, b], 2, cos);
    expect([...cos]).toEqual([0.6, 0]); // 3 / √25
    slab.release(a);
    expect(slab.used).toBe(1);
    expect(slab.alloc()).toBe(a);
    expect(() => slab.write(b, new Float32Array(5))).toThrow(/5 floats/);
    expect(() => slab.cosines(new Float32Array(3), [a], 1, cos)).toThrow(/3 floats/);
  });
});
