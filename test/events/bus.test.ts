import { Database } from "bun:sqlite";
import { describe, expect, test } from "vitest";
import { EventBus, type DomainEvent } from "../../src/events/bus.ts";

/** A real (in-memory) SQLite database: what matters is that subscribers run after COMMIT, never inside. */
function setup() {
  const db = new Database(":memory:");
  db.run("CREATE TABLE t (v INTEGER)");
  const errors: string[] = [];
  const bus = new EventBus((type, err) => errors.push(`${type}: ${(err as Error).message}`));
  const seen: { event: DomainEvent; inTransaction: boolean; rows: number }[] = [];
  const watch = (e: DomainEvent) => seen.push({ event: e, inTransaction: db.inTransaction, rows: db.query<{ n: number }, []>("SELECT count(*) AS n FROM t").get()!.n });
  return { db, bus, seen, errors, watch };
}

describe("EventBus", () => {
  test("an event published inside a transaction reaches subscribers only after it committed", () => {
    const { db, bus, seen, watch } = setup();
    bus.subscribe("video.content_changed", watch);
    bus.afterCommit(() =>
      db.transaction(() => {
        db.run("INSERT INTO t VALUES (1)");
        bus.publish({ type: "video.content_changed", videoId: "v1" });
        expect(seen).toEqual([]); // held while the transaction is open
      })(),
    );
    expect(seen).toEqual([{ event: { type: "video.content_changed", videoId: "v1" }, inTransaction: false, rows: 1 }]);
  });

  test("a rolled-back transaction announces nothing, also what a successful savepoint inside it published", () => {
    const { db, bus, seen, watch } = setup();
    bus.subscribe("outbox.written", watch);
    expect(() =>
      bus.afterCommit(() =>
        db.transaction(() => {
          bus.afterCommit(() => db.transaction(() => bus.publish({ type: "outbox.written", accountId: "a" }))());
          throw new Error("boom");
        })(),
      ),
    ).toThrow("boom");
    expect(seen).toEqual([]);
    // The bus is usable afterwards: nothing left held.
    bus.publish({ type: "outbox.written", accountId: "b" });
    expect(seen.map((s) => s.event)).toEqual([{ type: "outbox.written", accountId: "b" }]);
  });

  test("nested commits deliver once, in publish order, when the outer one commits", () => {
    const { db, bus, seen, watch } = setup();
    bus.subscribe("job.completed", watch);
    bus.subscribe("outbox.written", watch);
    bus.afterCommit(() =>
      db.transaction(() => {
        bus.afterCommit(() => db.transaction(() => bus.publish({ type: "outbox.written", accountId: "a" }))());
        expect(seen).toEqual([]);
        bus.publish({ type: "job.completed", jobId: "j", videoId: "v", accountId: "a" });
      })(),
    );
    expect(seen.map((s) => [s.event.type, s.inTransaction])).toEqual([
      ["outbox.written", false],
      ["job.completed", false],
    ]);
  });

  test("only subscribers of the type run; one that throws is reported and the others still run", () => {
    const { bus, errors } = setup();
    const got: string[] = [];
    bus.subscribe("videos.deleted", () => {
      throw new Error("cache gone");
    });
    bus.subscribe("videos.deleted", (e) => got.push(e.videoIds.join(",")));
    bus.subscribe("job.retried", (e) => got.push(`retried ${e.jobId}`));
    expect(() => bus.publish({ type: "videos.deleted", videoIds: ["a", "b"] })).not.toThrow();
    expect(got).toEqual(["a,b"]);
    expect(errors).toEqual(["videos.deleted: cache gone"]);
  });
});
