/**
 * rowId → (partition number, slot), open addressing with linear probing on typed arrays.
 * A JS Map<number, …> costs ~65 bytes per entry in Bun (65 MB per million rows); this costs
 * 16 bytes per bucket at ≤ 75 % load. Deletion shifts the following run back (no tombstones).
 * Keys are safe integers (SQLite rowids).
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
  private keys: Float64Array;
  private parts: Int32Array;
  private slots: Int32Array;
  private mask: number;
  size = 0;

  constructor(initialCapacity = 1024) {
    let cap = 16;
    while (cap < initialCapacity) cap *= 2;
    this.keys = new Float64Array(cap);
    this.parts = new Int32Array(cap).fill(EMPTY);
    this.slots = new Int32Array(cap);
    this.mask = cap - 1;
  }

  /** Bucket index holding `key`, or -1. */
  find(key: number): number {
    for (let i = hash(key) & this.mask; ; i = (i + 1) & this.mask) {
      if (this.parts[i] === EMPTY) return -1;
      if (this.keys[i] === key) return i;
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

  /** Inserts or overwrites. */
  set(key: number, part: number, slot: number): void {
    if ((this.size + 1) * 4 > this.keys.length * 3) this.rehash(this.keys.length * 2);
    let i = hash(key) & this.mask;
    for (; this.parts[i] !== EMPTY; i = (i + 1) & this.mask) {
      if (this.keys[i] === key) break;
    }
    if (this.parts[i] === EMPTY) this.size++;
    this.keys[i] = key;
    this.parts[i] = part;
    this.slots[i] = slot;
  }

  delete(key: number): boolean {
    let i = this.find(key);
    if (i < 0) return false;
    // Backward-shift: move later entries of the run into the hole when their home allows it.
    for (let j = (i + 1) & this.mask; this.parts[j] !== EMPTY; j = (j + 1) & this.mask) {
      const home = hash(this.keys[j]) & this.mask;
      // j may move to i if home is not cyclically within (i, j].
      if (((j - home) & this.mask) >= ((j - i) & this.mask)) {
        this.keys[i] = this.keys[j];
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
    const { keys, parts, slots } = this;
    this.keys = new Float64Array(cap);
    this.parts = new Int32Array(cap).fill(EMPTY);
    this.slots = new Int32Array(cap);
    this.mask = cap - 1;
    this.size = 0;
    for (let i = 0; i < keys.length; i++) if (parts[i] !== EMPTY) this.set(keys[i], parts[i], slots[i]);
  }

  get byteLength(): number {
    return this.keys.byteLength + this.parts.byteLength + this.slots.byteLength;
  }
}
