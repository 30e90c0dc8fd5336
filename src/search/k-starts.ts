/**
 * Where a vector mode's look-up starts its k when the query is new (vector-modes.ts `admitted`).
 *
 * A look-up starts at a small k and asks again ×4 while at least half of its answers pass the
 * cut. Asking again is the dear part: the second call re-encodes the query, re-estimates a larger
 * candidate set and rescores it (at 100 k frames ~1.1 ms of the event loop's time against ~2.1 ms
 * for the first; bench/search-bench.ts). When most queries of an account end at the same larger
 * k, starting there skips that call for most of them. So the k each look-up ended at is kept, per
 * account, mode and scope (the last RECENT of them), and a new query starts at the largest level
 * at least a third of them needed — a bigger first call costs ~0.3 ms a level, a second one ~1 ms,
 * so a third is where the two weigh the same. With fewer than MIN_SEEN ends on record it starts
 * at the bottom. Starting higher only ever admits more rows above the cut, never fewer.
 *
 * What is kept is the k a look-up *needed*, not the one it ended at: one that started at 512 and
 * found 40 rows over the cut would have stopped at 128 (its answers are best first and the cut is
 * a score, so the first 128 held the same 40), and counting it as 512 would keep every later
 * query starting high after the account's queries changed.
 */

/** Ends kept per key, and how many before they are trusted. */
const RECENT = 32;
const MIN_SEEN = 8;
/** Keys kept (accounts × kinds × scopes × cuts); the least recently noted goes first. */
const MAX_KEYS = 1024;

export class KStarts {
  private readonly ends = new Map<string, number[]>();

  constructor(
    /** The k a look-up starts at with nothing on record (and each level is this × 4^i). */
    readonly first: number,
    private readonly maxKeys = MAX_KEYS,
  ) {}

  /** The k a new query's look-up under `key` starts at (at most `max`). */
  start(key: string, max: number): number {
    const ends = this.ends.get(key);
    let k = this.first;
    if (ends && ends.length >= MIN_SEEN) {
      // The largest level that at least a third of the recent look-ups reached.
      for (let next = k * 4; next <= max * 4; next *= 4) {
        const level = Math.min(next, max);
        if (ends.filter((e) => e >= level).length * 3 < ends.length) break;
        k = level;
        if (level === max) break;
      }
    }
    return Math.min(k, max);
  }

  /**
   * A look-up under `key` ended at k = `ended` (at most `max`) with `returned` answers, `kept` of
   * them over the cut: records the smallest level at which the walk up from `first` would have
   * stopped with the same answers over the cut.
   */
  noteEnd(key: string, ended: number, returned: number, kept: number, max: number): void {
    let k = Math.min(this.first, max);
    while (k < ended && returned >= k && kept >= k / 2) k = Math.min(max, k * 4);
    this.note(key, Math.min(k, ended));
  }

  private note(key: string, k: number): void {
    let ends = this.ends.get(key);
    if (ends) this.ends.delete(key);
    else {
      ends = [];
      if (this.ends.size >= this.maxKeys) this.ends.delete(this.ends.keys().next().value!);
    }
    ends.push(k);
    if (ends.length > RECENT) ends.shift();
    // Re-inserted: the map's order is the order keys were last noted in.
    this.ends.set(key, ends);
  }

  /** Keys on record (tests). */
  get size(): number {
    return this.ends.size;
  }
}
