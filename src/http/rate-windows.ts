/**
 * Rate-limit windows in the database (issue 26): every `serve` process on one PostgreSQL database
 * counts against the same rows, so a limit is a limit however many servers answer, and a
 * sign-in lock-out holds on all of them. One upsert per limited request (`take`): the window's
 * reset, the fit check and the count in one statement, atomic under concurrent servers (the row
 * lock of ON CONFLICT DO UPDATE). The table is UNLOGGED (migration 008): no WAL per request.
 * Windows start on the clock of the server that opens them (the app's `now`, which tests move);
 * servers whose clocks differ by seconds move a window's edge by as much, never its count.
 * The leader deletes windows that have ended (`prune`, a leader duty in app.ts).
 */
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

/** PostgreSQL's text holds no NUL, which callers use as a separator (an address and an e-mail): escaped, one to one. */
const textKey = (who: string) => who.replaceAll("\\", "\\\\").replaceAll("\u0000", "\\0");

export class DbRateLimiter implements RateLimits {
  constructor(
    private readonly db: Executor,
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
      textKey(who),
      t,
      n,
      limit,
      this.windowMs,
    );
    if (!row) throw new Error("rate window upsert returned no row");
    return rateResult(limit, row.count, Number(row.window_start), row.ok, t, this.windowMs);
  }

  async refund(group: RateGroup, who: string): Promise<void> {
    await this.db.run(REFUND, group, textKey(who), this.now(), this.windowMs);
  }

  /** Deletes the windows that have ended (a leader duty); how many went. */
  async prune(): Promise<number> {
    return (await this.db.run(PRUNE, this.now(), this.windowMs)).changes;
  }
}
