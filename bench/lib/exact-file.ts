/**
 * Exact ground truth for sets that live in a file of n × dim f32 rows (row-major, no header):
 * the file is memory-mapped in pieces (one Bun.mmap is limited to < 4 GiB here) and streamed
 * through streamingExact, optionally split over worker threads by query.
 */
import { streamingExact } from "./exact.ts";

/** Rows per mapped piece: 2^20 × 512 f32 = 2 GiB. */
const PIECE_ROWS = 1 << 20;

export interface MappedRows {
  /** Row i (a view on the mapping: reading it may fault the page in from disk). */
  row(i: number): Float32Array;
  /** Rows [from, to) as one view; the range must not cross a piece (2^20 rows). */
  slice(from: number, to: number): Float32Array;
  readonly pieceRows: number;
}

export function mapRows(path: string, n: number, dim: number): MappedRows {
  const pieces: Float32Array[] = [];
  for (let from = 0; from < n; from += PIECE_ROWS) {
    const rows = Math.min(PIECE_ROWS, n - from);
    const u = Bun.mmap(path, { shared: false, offset: from * dim * 4, size: rows * dim * 4 });
    if (u.byteLength !== rows * dim * 4)
      throw new Error(`${path}: mapped ${u.byteLength} bytes at row ${from}, wanted ${rows * dim * 4}`);
    pieces.push(new Float32Array(u.buffer, u.byteOffset, rows * dim));
  }
  return {
    pieceRows: PIECE_ROWS,
    row: (i) => {
      const o = (i % PIECE_ROWS) * dim;
      return pieces[Math.floor(i / PIECE_ROWS)].subarray(o, o + dim);
    },
    slice: (from, to) => {
      const p = Math.floor(from / PIECE_ROWS);
      if (to - p * PIECE_ROWS > PIECE_ROWS) throw new Error("slice crosses a piece");
      return pieces[p].subarray((from - p * PIECE_ROWS) * dim, (to - p * PIECE_ROWS) * dim);
    },
  };
}

/** A query set; with `filter`, query q only ranks rows r with filter.of[r] === filter.eqs[q]. */
export interface TruthSet {
  queries: Float32Array;
  filter?: { of: Int32Array; eqs: Int32Array };
}

/** Exact top-k (row indices, best first) per query of each set, in one pass over the file. */
export function truthFromFile(path: string, n: number, dim: number, k: number, sets: TruthSet[]): Int32Array[][] {
  const rows = mapRows(path, n, dim);
  const st = streamingExact(dim, k);
  const handles = sets.map((s) =>
    st.addQueries(s.queries, s.filter ? (q) => ({ of: s.filter!.of, eq: s.filter!.eqs[q] }) : undefined),
  );
  const step = st.chunkRows * 4; // divides PIECE_ROWS
  for (let from = 0; from < n; from += step) st.scan(rows.slice(from, Math.min(n, from + step)), from);
  return handles.map((h) => h.truth());
}

/**
 * truthFromFile with the queries of every set split over `threads` workers (each maps the file
 * and scans all of it for its share of the queries); the answer is the same, in query order.
 */
export async function truthFromFileThreads(
  path: string,
  n: number,
  dim: number,
  k: number,
  sets: TruthSet[],
  threads: number,
): Promise<Int32Array[][]> {
  if (threads <= 1) return truthFromFile(path, n, dim, k, sets);
  const parts = Array.from({ length: threads }, (_, t) =>
    sets.map((s) => {
      const nq = s.queries.length / dim;
      const a = Math.floor((nq * t) / threads),
        b = Math.floor((nq * (t + 1)) / threads);
      return {
        queries: s.queries.slice(a * dim, b * dim),
        filter: s.filter && { of: s.filter.of, eqs: s.filter.eqs.slice(a, b) },
      };
    }),
  );
  const answers = await Promise.all(
    parts.map(
      (part) =>
        new Promise<Int32Array[][]>((resolve, reject) => {
          const w = new Worker(new URL("./exact-worker.ts", import.meta.url).href);
          w.onmessage = (e: MessageEvent<Int32Array[][]>) => {
            resolve(e.data);
            w.terminate();
          };
          w.onerror = (e) => reject(e);
          w.postMessage({ path, n, dim, k, sets: part });
        }),
    ),
  );
  return sets.map((_, s) => answers.flatMap((a) => a[s]));
}
