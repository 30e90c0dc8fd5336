/**
 * In-memory vector index for search: per-account partitions, filters applied before ranking,
 * a WebAssembly SIMD coarse scan over sign bits, 1-bit and 2-bit (or 4-bit) estimates, exact rescoring from
 * the caller's source vectors. search.ts has the stages; README.md the measurements behind them.
 */
import type { VectorIndex, VectorIndexOptions, VectorSource } from "./types.ts";
import { SegmentedIndex } from "./segments.ts";

export { SnapshotMismatch, segmentBodyBytes } from "./snapshot.ts";
export type {
  AllowFilter,
  ByteSource,
  IndexSnapshot,
  SegmentHeader,
  CompactionResult,
  CompactionStats,
  ScanReuse,
  SearchOptions,
  SearchResult,
  SearchStats,
  TrainingStats,
  VectorIndex,
  VectorIndexOptions,
  VectorRow,
  VectorSource,
} from "./types.ts";

export function createVectorIndex(options: VectorIndexOptions): VectorIndex {
  return new SegmentedIndex(options);
}

/**
 * A VectorSource over vectors held in memory (tests, tools). The app's source reads the store's
 * `frame_vectors` table instead.
 */
export function createMemoryVectorSource(): VectorSource & {
  set(rowId: number, vector: Float32Array): void;
  delete(rowId: number): void;
} {
  const vectors = new Map<number, Float32Array>();
  return {
    set: (rowId, vector) => void vectors.set(rowId, vector),
    delete: (rowId) => void vectors.delete(rowId),
    getVectors: (rowIds) => rowIds.map((id) => vectors.get(id)),
  };
}
