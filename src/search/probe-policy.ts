/**
 * How much of an account's vectors a query reads in the in-memory index's inverted lists
 * (src/vector `probe` / `probeAt` / `probeGrowth`), chosen per request by what was measured on the bench
 * generator (BENCHMARKS.md, "Vector search at scale"; bench/vector-scale-bench.ts prints an
 * "app:" row for each policy below).
 */
import type { ProbePolicy } from "./indexes.ts";

/**
 * Image-only queries: 2.8 % of the rows at 1 M, the rows read growing as √n around that. With the
 * finer lists (32-row chunks, ~n/256 lists up to 4.2 M rows), measured quiet: 100 k rows ~9 k
 * read, recall@10 0.99, < 1 ms; 1 M 28 k read, 0.99, ~1.8 ms; 10 M 112 k read, 0.958, 7.6 ms
 * (BENCHMARKS.md, "10 M after compaction").
 */
export const IMAGE_QUERY_PROBE: ProbePolicy = { share: 0.028, at: 1_000_000, inDistribution: true };

/**
 * Text queries (issue 27): 30 % of the rows from 1 M rows up, a larger share below (rows read
 * growing as n^0.9 below 1 M: 38 % at 100 k). A text embedding sits off the image manifold
 * (CLIP's modality gap), so its neighbours are less concentrated in the lists nearest it than an
 * image query's, and the rows needed grow with the library rather than as √n: on the bench
 * generator's pessimistic model, recall at a fixed share held from 1 M to 10 M, while 100 k rows
 * needed a larger share (BENCHMARKS.md, "Text queries probed"). The share is the smallest that
 * kept recall@10 ≥ 0.95 and the flat scan's task hits (own shot in the top-10) within 2 % on that
 * model at 100 k and 1 M rows.
 */
export const TEXT_QUERY_PROBE: ProbePolicy = { share: 0.3, at: 1_000_000, growth: [0.9, 1] };

export interface ProbeInput {
  hasText: boolean;
  hasImage: boolean;
  /** A collection or label filter: the allowed neighbours are then far from the query's lists. */
  filtered: boolean;
  /** The request asked for every row to be read (`exact`). */
  exact: boolean;
}

/**
 * The probe for one request, or undefined for a flat scan of every allowed row: `exact`, a
 * collection or label filter (measured: a filtered query's allowed neighbours sit outside its
 * nearest lists, 0.87–0.94 recall at 1–2 %), and small accounts (the index keeps those flat) read
 * everything; a text query (alone or with an image) probes TEXT_QUERY_PROBE, an image-only
 * query IMAGE_QUERY_PROBE.
 */
export function probeFor(q: ProbeInput): ProbePolicy | undefined {
  if (q.exact || q.filtered) return undefined;
  if (q.hasText) return TEXT_QUERY_PROBE;
  if (q.hasImage) return IMAGE_QUERY_PROBE;
  return undefined;
}
