/**
 * Memory admission for the in-memory vector index (issue 27): `vector_memory_budget` bounds what
 * the index may hold. Before rows are added, the index's bytes after the add (at the bytes a row
 * costs so far, with headroom for a retrain's reserve) are checked against the budget; rows that
 * would pass it are not added, and their account is searched from the database instead (exact
 * scans: complete, slower) until the next start. Nothing is retried: a budget reached, or a
 * WebAssembly memory that cannot grow, settles the account once.
 *
 * A start that was killed while loading (an OOM kill leaves no trace but this) must not load the
 * same rows again: the loader records how far it got in a journal beside the snapshot
 * (`index/warm.json`), and a start that finds an unfinished journal lowers its budget below what
 * the killed start reached. The state is also written to `index/status.json`, which `doctor`
 * (another process) reads.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Logger } from "../core/logger.ts";

/**
 * Headroom over the index's steady bytes: a retrain reserves its new lists' scan blocks (66 of the
 * ~190 B a row) before the old lists' are freed.
 */
export const PEAK_FACTOR = 1.4;
/** Bytes a row costs when nothing says better (2-bit layout, 512 dims: ~190 B/row live). */
const FIRST_ROW_BYTES = 256;
/** A killed load's next try aims at this share of what it reached. */
const RETRY_SHARE = 0.7;

export interface AdmissionStatus {
  /** The budget in force (bytes; Infinity: none), and why it is what it is. */
  budgetBytes: number;
  budgetReason: string;
  /** The index's bytes now. */
  indexBytes: number;
  /** Accounts whose vectors are not (all) in memory, and why. */
  degraded: { accountId: string; reason: string }[];
}

/** What `doctor` reads (index/status.json): the running server's admission state. */
export function readAdmissionStatus(dataDir: string): (AdmissionStatus & { writtenAt: string; pid: number }) | null {
  try {
    return JSON.parse(readFileSync(join(dataDir, "index", "status.json"), "utf8"));
  } catch {
    return null;
  }
}

function writeJson(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, JSON.stringify(value));
  renameSync(`${path}.tmp`, path);
}

export class MemoryAdmission {
  private readonly degraded = new Map<string, string>();
  private budget: number;
  private budgetReason: string;
  private journalAt = 0;

  constructor(
    budgetBytes: number,
    /** The index's bytes now, and its bytes per row so far (0 before any row). */
    private readonly usage: () => { bytes: number; perRow: number },
    /** `<data dir>/index` (null: nothing written: tests, the CLI). */
    private readonly dir: string | null,
    private readonly logger?: Logger,
  ) {
    this.budget = budgetBytes > 0 ? budgetBytes : Infinity;
    this.budgetReason = Number.isFinite(this.budget) ? "vector_memory_budget" : "no budget";
  }

  /**
   * At the start of a load: a journal left by a load that never finished (the process was killed:
   * out of memory, most likely) lowers the budget to RETRY_SHARE of what that load reached.
   */
  beginLoad(): void {
    if (!this.dir) return;
    const journal = join(this.dir, "warm.json");
    if (existsSync(journal)) {
      try {
        const j = JSON.parse(readFileSync(journal, "utf8")) as { reachedBytes?: number; pid?: number };
        if ((j.reachedBytes ?? 0) > 0 && j.reachedBytes! * RETRY_SHARE < this.budget) {
          this.budget = j.reachedBytes! * RETRY_SHARE;
          this.budgetReason = `the last start (pid ${j.pid}) stopped while loading at ${mb(j.reachedBytes!)} (killed?): loading at most ${mb(this.budget)} this time`;
          this.logger?.warn("search index: the last load did not finish; lowering its memory budget", {
            reached_mb: Math.round(j.reachedBytes! / 2 ** 20),
            budget_mb: Math.round(this.budget / 2 ** 20),
          });
        }
      } catch {
        // An unreadable journal says nothing: the budget stays.
      }
    }
    this.journal(true);
  }

  /** The load finished: the journal goes (a later kill is not the load's doing). */
  endLoad(): void {
    if (!this.dir) return;
    rmSync(join(this.dir, "warm.json"), { force: true });
    this.writeStatus();
  }

  /** Records how far a load got (at most every 64 MiB of growth). */
  private journal(force = false): void {
    if (!this.dir) return;
    const { bytes } = this.usage();
    if (!force && bytes < this.journalAt + 64 * 2 ** 20) return;
    this.journalAt = bytes;
    try {
      writeJson(join(this.dir, "warm.json"), { pid: process.pid, reachedBytes: bytes, at: new Date().toISOString() });
    } catch (e) {
      this.logger?.warn("search index: could not write the load journal", { err: (e as Error).message });
    }
  }

  /** Whether the account is searched from the database (its vectors are not all in memory). */
  isDegraded(accountId: string): boolean {
    return this.degraded.size > 0 && this.degraded.has(accountId);
  }

  /**
   * Whether `rows` more rows fit the budget. When they do not, the caller adds none of them and
   * calls `degrade` for their accounts.
   */
  fits(rows: number): boolean {
    if (!Number.isFinite(this.budget)) return true;
    const { bytes, perRow } = this.usage();
    const after = (bytes + rows * (perRow > 0 ? perRow : FIRST_ROW_BYTES)) * PEAK_FACTOR;
    this.journal();
    return after <= this.budget;
  }

  degrade(accountId: string, reason: string): void {
    if (this.degraded.has(accountId)) return;
    this.degraded.set(accountId, reason);
    this.logger?.warn("search index: an account is searched from the database (exact scans)", {
      account_id: accountId,
      reason,
    });
    this.writeStatus();
  }

  status(): AdmissionStatus {
    return {
      budgetBytes: this.budget,
      budgetReason: this.budgetReason,
      indexBytes: this.usage().bytes,
      degraded: [...this.degraded].map(([accountId, reason]) => ({ accountId, reason })),
    };
  }

  /** One line for /readyz: the index within its budget, or which accounts are searched from the database. */
  line(): string | null {
    if (!this.degraded.size) return null;
    return `${this.degraded.size} account(s) over vector_memory_budget (${mb(this.budget)}): searched with exact scans from the database`;
  }

  private writeStatus(): void {
    if (!this.dir) return;
    try {
      writeJson(join(this.dir, "status.json"), {
        ...this.status(),
        budgetBytes: Number.isFinite(this.budget) ? this.budget : null,
        writtenAt: new Date().toISOString(),
        pid: process.pid,
      });
    } catch (e) {
      this.logger?.warn("search index: could not write its status", { err: (e as Error).message });
    }
  }
}

export const mb = (bytes: number) =>
  !Number.isFinite(bytes)
    ? "no limit"
    : `${bytes < 10 * 2 ** 20 ? (bytes / 2 ** 20).toFixed(1) : Math.round(bytes / 2 ** 20)} MiB`;
