/**
 * Rate-limit windows in the database (issue 26): every `serve` process on one PostgreSQL database
 * counts against the same rows, so a limit is a limit however many servers answer, and a
 * sign-in lock-out holds on all of them. One upsert per limited request (`take`): the window's
 * reset, the fit check and the count in one statement, atomic under concurrent servers (the row
 * lock of ON CONFLICT DO UPDATE). The table is UNLOGGED (migration 008): no WAL per request.
 * Windows start on the clock of the server that opens them (the app's `now`, which tests move);
 * servers whose clocks differ by seconds move a window's edge by as much, never its count.
 * The leader deletes windows that have ended (`prune`, a leader duty in app.ts).
 * Rows name no one: `who` (an API key id, a client address, an e-mail being signed in with) is
 * stored as an HMAC keyed with the cluster secret, the same on every node, so the table holds no
 * personal data and a deleted account leaves nothing of itself in it.
 */
import { createHmac } from "node:crypto";
import type { RateGroup } from "../config/config.ts";
import type { Executor } from "../store/executor.ts";
import { type RateLimits, type RateResult, rateResult } from "./rate-limit.ts";

// ?1 group, ?2 who, ?3 now (ms), ?4 n, ?5 limit, ?6 window (ms). SET reads the row as it was.
const TAKE = `INSERT INTO rate_windows AS w (grp, who, window_start, count, ok)
  VALUES (?1, ?2, ?3::bigint, CASE WHEN greatest(1, ?4::int) <= ?5::int THEN ?4::int ELSE 0 END, greatest(1, ?4::int) <= ?5::int)
  ON CONFLICT (grp, who) DO UPDATE SET
    window_start = CASE WHEN w.window_start <= ?3::bigint - ?6::bigint THEN ?3::bigint ELSE w.window_start END,
    count = CASE WHEN w.window_start <= ?3::bigint - ?6::bigint THEN excluded.count
                 WHEN w.count + greatest(1, ?4::int) <= ?5::int THEN w.count + ?4::int
                 ELSE w.count END,
    ok = CASE WHEN w.window_start <= ?3::bigint - ?6::bigint THEN excluded.ok
              ELSE w.count + greatest(1, ?4::int) <= ?5::int END
  RETURNING window_start, count, ok`;

const REFUND = `UPDATE rate_windows SET count = count - 1
  WHERE grp = ?1 AND who = ?2 AND count > 0 AND window_start > ?3::bigint - ?4::bigint`;

const PRUNE = "DELETE FROM rate_windows WHERE window_start <= ?1::bigint - ?2::bigint";

export class DbRateLimiter implements RateLimits {
  constructor(
    private readonly db: Executor,
    /** The cluster secret: the key of the HMAC that stands for `who` in the table. */
    private readonly secret: Buffer,
    private readonly limits: Record<RateGroup, number>,
    private readonly now: () => number = Date.now,
    private readonly windowMs = 60_000,
  ) {}

  async take(group: RateGroup, who: string, n: number): Promise<RateResult> {
    const limit = this.limits[group];
    const t = this.now();
    const [row] = await this.db.write<{ window_start: number; count: number; ok: boolean }>(
      TAKE,
      group,
      this.rowKey(who),
      t,
      n,
      limit,
      this.windowMs,
    );
    if (!row) throw new Error("rate window upsert returned no row");
    return rateResult(limit, row.count, Number(row.window_start), row.ok, t, this.windowMs);
  }

  /** 128 bits of HMAC-SHA256 in hex: one to one in practice, and no identifier in the row. */
  private rowKey(who: string): string {
    return createHmac("sha256", this.secret).update(`rate-window\u0000${who}`).digest("hex").slice(0, 32);
  }

  async refund(group: RateGroup, who: string): Promise<void> {
    await this.db.run(REFUND, group, this.rowKey(who), this.now(), this.windowMs);
  }

  /** Deletes the windows that have ended (a leader duty); how many went. */
  async prune(): Promise<number> {
    return (await this.db.run(PRUNE, this.now(), this.windowMs)).changes;
  }
}
