/**
 * rowId → (partition number, slot), open addressing with linear probing on typed arrays.
 * A JS Map<number, …> costs ~65 bytes per entry in Bun (65 MB per million rows); this costs
 * 8 bytes per bucket at ≤ 75 % load (11–21 B a row): the key is not stored, `keyOf(part, slot)`
 * reads it back from where the row lives (the partition's rowIds), so the owner must update the
 * map whenever a row's slot changes and keep rowIds[slot] set while its entry points there.
 * (Keys stored as f64 took another 8 B a bucket: 17–34 B a row.) Deletion shifts the following
 * run back (no tombstones). Keys are safe integers (SQLite rowids).
 */
const EMPTY = -1;

function hash(key: number): number {
  const lo = key >>> 0;
  const hi = Math.floor(key / 4294967296) | 0;
  let h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

export class IdMap {
  private parts: Int32Array;
  private slots: Int32Array;
  private mask: number;
  size = 0;

  constructor(
    private readonly keyOf: (part: number, slot: number) => number,
    initialCapacity = 1024,
  ) {
    let cap = 16;
    while (cap < initialCapacity) cap *= 2;
    this.parts = new Int32Array(cap).fill(EMPTY);
    this.slots = new Int32Array(cap);
    this.mask = cap - 1;
  }

  /** Bucket index holding `key`, or -1. */
  find(key: number): number {
    for (let i = hash(key) & this.mask; ; i = (i + 1) & this.mask) {
      if (this.parts[i] === EMPTY) return -1;
      if (this.keyOf(this.parts[i], this.slots[i]) === key) return i;
    }
  }

  partAt(bucket: number): number {
    return this.parts[bucket];
  }
  slotAt(bucket: number): number {
    return this.slots[bucket];
  }
  setSlotAt(bucket: number, slot: number): void {
    this.slots[bucket] = slot;
  }

  /** Inserts or overwrites; keyOf(part, slot) must already return `key`. */
  set(key: number, part: number, slot: number): void {
    if ((this.size + 1) * 4 > this.parts.length * 3) this.rehash(this.parts.length * 2);
    let i = hash(key) & this.mask;
    for (; this.parts[i] !== EMPTY; i = (i + 1) & this.mask) {
      if (this.keyOf(this.parts[i], this.slots[i]) === key) break;
    }
    if (this.parts[i] === EMPTY) this.size++;
    this.parts[i] = part;
    this.slots[i] = slot;
  }

  delete(key: number): boolean {
    let i = this.find(key);
    if (i < 0) return false;
    // Backward-shift: move later entries of the run into the hole when their home allows it.
    for (let j = (i + 1) & this.mask; this.parts[j] !== EMPTY; j = (j + 1) & this.mask) {
      const home = hash(this.keyOf(this.parts[j], this.slots[j])) & this.mask;
      // j may move to i if home is not cyclically within (i, j].
      if (((j - home) & this.mask) >= ((j - i) & this.mask)) {
        this.parts[i] = this.parts[j];
        this.slots[i] = this.slots[j];
        i = j;
      }
    }
    this.parts[i] = EMPTY;
    this.size--;
    return true;
  }

  private rehash(cap: number): void {
    const { parts, slots } = this;
    this.parts = new Int32Array(cap).fill(EMPTY);
    this.slots = new Int32Array(cap);
    this.mask = cap - 1;
    this.size = 0;
    for (let i = 0; i < parts.length; i++)
      if (parts[i] !== EMPTY) this.set(this.keyOf(parts[i], slots[i]), parts[i], slots[i]);
  }

  get byteLength(): number {
    return this.parts.byteLength + this.slots.byteLength;
  }
}
