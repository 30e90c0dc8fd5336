import type { Executor } from "../store/executor.ts";
import { DATABASE_CLOCK, type DbClock, withDbNow } from "../store/sql.ts";

/** What a process runs as: the embedded default does both; `serve` answers HTTP; `worker` only claims tasks. */
export type NodeRole = "all" | "serve" | "worker";

/** One row of the node registry (table `nodes`, migration 014 / PostgreSQL 007). */
export interface NodeRow {
  id: string;
  role: NodeRole;
  /** JSON array of task kinds. */
  kinds: string;
  concurrency: number;
  device: string;
  /** JSON `{ "image-text": model id | null, speech: model id | null }`. */
  models: string;
  version: string;
  host: string;
  pid: number;
  started_at: number;
  heartbeat_at: number;
  stopped_at: number | null;
  refused: string | null;
}

export type NewNode = Omit<NodeRow, "started_at" | "heartbeat_at" | "stopped_at">;

/**
 * All SQL of the node registry. Times are the database's clock (`withDbNow`), like the task
 * queue's leases: nodes on machines whose clocks disagree still agree on who beat last.
 */
export class NodeStore {
  constructor(
    private readonly db: Executor,
    private readonly clock: DbClock = DATABASE_CLOCK,
  ) {}

  /** A node's start: its row, fresh (a node restarted on its data dir replaces its previous row). */
  async register(n: NewNode): Promise<void> {
    await this.db.run(
      withDbNow(
        (
          now,
        ) => `INSERT INTO nodes (id, role, kinds, concurrency, device, models, version, host, pid, refused, started_at, heartbeat_at)
           VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ${now}, ${now})
           ON CONFLICT (id) DO UPDATE SET role = excluded.role, kinds = excluded.kinds,
             concurrency = excluded.concurrency, device = excluded.device, models = excluded.models,
             version = excluded.version, host = excluded.host, pid = excluded.pid,
             started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at,
             stopped_at = NULL, refused = excluded.refused`,
      ),
      this.clock.skewMs(),
      n.id,
      n.role,
      n.kinds,
      n.concurrency,
      n.device,
      n.models,
      n.version,
      n.host,
      n.pid,
      n.refused,
    );
  }

  /** The heartbeat (and why the node claims nothing, if it refuses). False: the row is gone (register again). */
  async beat(id: string, refused: string | null): Promise<boolean> {
    const { changes } = await this.db.run(
      withDbNow((now) => `UPDATE nodes SET heartbeat_at = ${now}, refused = ?2, stopped_at = NULL WHERE id = ?3`),
      this.clock.skewMs(),
      refused,
      id,
    );
    return changes === 1;
  }

  /** A clean stop: the row stays (the list shows it stopped) until the node starts again. */
  async stopped(id: string): Promise<void> {
    await this.db.run(
      withDbNow((now) => `UPDATE nodes SET stopped_at = ${now} WHERE id = ?2`),
      this.clock.skewMs(),
      id,
    );
  }

  /** Every node, with the database's clock now (for the age of each heartbeat). */
  async list(): Promise<{ now: number; nodes: NodeRow[] }> {
    const nodes = await this.db.all<NodeRow>("SELECT * FROM nodes ORDER BY started_at, id");
    const now = await this.db.get<{ now: number }>(
      withDbNow((now) => `SELECT ${now} AS now`),
      this.clock.skewMs(),
    );
    return { now: now!.now, nodes };
  }
}
