/**
 * A first-come, first-served async lock. The SQLite executor holds one for a transaction's whole
 * length (its body awaits between statements) and for each write made outside one, so no other
 * flow's statement lands on the writer connection in between; the in-memory vector index holds
 * one around each of its mutations that reads the store first.
 */
export class Mutex {
  private held = false;
  private readonly waiting: (() => void)[] = [];

  /** Whether someone holds the lock now. */
  get locked(): boolean {
    return this.held;
  }

  /** Resolves with the release function once the lock is this caller's. */
  acquire(): Promise<() => void> {
    if (!this.held) {
      this.held = true;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve) => this.waiting.push(() => resolve(this.releaser())));
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return; // a second call must not hand the lock on twice
      done = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.held = false;
    };
  }
}

/** Runs `fn` holding `lock`, releasing it however `fn` ends. */
export async function withLock<T>(lock: Mutex, fn: () => Promise<T>): Promise<T> {
  const release = await lock.acquire();
  try {
    return await fn();
  } finally {
    release();
  }
}
