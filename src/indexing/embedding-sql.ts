/**
 * Exact vectors in the store: SQLite keeps them as blobs (float32, little-endian), PostgreSQL as
 * pgvector `vector` columns. Stores bind and read them through these, so rows carry the same
 * bytes on both backends (`Uint8Array` of little-endian float32, what the rescoring reads).
 *
 * PostgreSQL is written the vector's text form, `[0.1,…]`: each float32 printed as the shortest
 * double that names it, which pgvector parses back to the same float32 (exact round trip). It is
 * read with `vector_send()`: int16 dimensions, int16 unused, then each float32 big-endian.
 */
import { type Backend, type DialectSql, dialect, type Param } from "../store/executor.ts";

/** The value bound for an `embedding` column on `backend`. */
export function embeddingParam(backend: Backend, v: Float32Array): Param {
  if (backend === "sqlite") return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  return `[${Array.prototype.join.call(v, ",")}]`;
}

/**
 * A read that selects an embedding, written once: `text(col)` receives the select expression for
 * a vector column (`col("v.embedding")`), which is named `embedding` on both backends.
 */
export const selectingEmbedding = (text: (col: (column: string) => string) => string): DialectSql =>
  dialect({ sqlite: text((c) => c), pg: text((c) => `vector_send(${c}) AS embedding`) });

/** A row's `embedding` as little-endian float32 bytes (PostgreSQL: from `vector_send`'s form). */
export function embeddingBytes(backend: Backend, raw: Uint8Array): Uint8Array {
  if (backend === "sqlite") return raw;
  const dim = (raw[0]! << 8) | raw[1]!;
  const out = new Uint8Array(dim * 4);
  for (let i = 0; i < dim; i++) {
    const at = 4 + i * 4;
    out[i * 4] = raw[at + 3]!;
    out[i * 4 + 1] = raw[at + 2]!;
    out[i * 4 + 2] = raw[at + 1]!;
    out[i * 4 + 3] = raw[at]!;
  }
  return out;
}

/** Rows with their `embedding` as little-endian float32 bytes (unchanged on SQLite). */
export function withEmbeddingBytes<R extends { embedding: Uint8Array }>(backend: Backend, rows: R[]): R[] {
  if (backend === "sqlite") return rows;
  for (const r of rows) r.embedding = embeddingBytes(backend, r.embedding);
  return rows;
}
