/** Rows per `IN (…)` list: SQLite allows 32 766 bound values; smaller lists keep each statement cheap to prepare. */
export const IN_CHUNK = 500;

/**
 * Runs `query` over `items` in lists of at most IN_CHUNK, handing it each part and the matching
 * `?,?,…` placeholders, and concatenates what it returns. The one place the search stores split a
 * long id list for an `IN (…)` clause.
 */
export function inChunks<T, R>(items: readonly T[], query: (part: T[], marks: string) => R[]): R[] {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += IN_CHUNK) {
    const part = items.slice(i, i + IN_CHUNK);
    for (const r of query(part, part.map(() => "?").join(","))) out.push(r);
  }
  return out;
}
