import { describe, expect, test } from "vitest";
import { EventBus, type DomainEvent } from "../../src/events/bus.ts";
import { EventStore } from "../../src/events/store.ts";
import { ownStoreFiles } from "../helpers/stores.ts";

const storeFiles = ownStoreFiles("vsearch-bus-");

/**
 * A real store file, written through the unit of work and the outbox store, and a second
 * connection to it: what matters is that subscribers run after COMMIT, when another connection
 * already sees the rows, never inside the transaction.
 */
function setup() {
  const dir = storeFiles.dir();
  const store = storeFiles.open(dir);
  const reader = storeFiles.open(dir);
  const outbox = new EventStore(store.db);
  const committed = () => new EventStore(reader.db).undispatched(100).length;
  const errors: string[] = [];
  const bus = new EventBus(store.uow, (type, err) => errors.push(`${type}: ${(err as Error).message}`));
  const seen: { event: DomainEvent; inTransaction: boolean; rows: number }[] = [];
  const watch = (e: DomainEvent) => seen.push({ event: e, inTransaction: store.uow.inTransaction, rows: committed() });
  return { uow: store.uow, outbox, committed, bus, seen, errors, watch };
}

describe("EventBus on the unit of work", () => {
  test("an event published inside a transaction reaches subscribers only after it committed", () => {
    const { uow, outbox, bus, seen, watch } = setup();
    bus.subscribe("video.content_changed", watch);
    uow.run(() => {
      outbox.record("acc_a", "video.created", { video_id: "v1" });
      bus.publish({ type: "video.content_changed", videoId: "v1" });
      expect(seen).toEqual([]); // held while the transaction is open
    });
    expect(seen).toEqual([{ event: { type: "video.content_changed", videoId: "v1" }, inTransaction: false, rows: 1 }]);
  });

  test("a rolled-back transaction announces nothing, also what a successful savepoint inside it published", () => {
    const { uow, outbox, committed, bus, seen, watch } = setup();
    bus.subscribe("outbox.written", watch);
    expect(() =>
      uow.run(() => {
        uow.run(() => {
          outbox.record("acc_a", "credits.low", { balance: 1 });
          bus.publish({ type: "outbox.written", accountId: "a" });
        });
        throw new Error("boom");
      }),
    ).toThrow("boom");
    expect(seen).toEqual([]);
    expect(committed()).toBe(0); // the savepoint's row went with the transaction
    // The bus is usable afterwards: nothing left held.
    bus.publish({ type: "outbox.written", accountId: "b" });
    expect(seen.map((s) => s.event)).toEqual([{ type: "outbox.written", accountId: "b" }]);
  });

  test("nested commits deliver once, in publish order, when the outer one commits", () => {
    const { uow, outbox, bus, seen, watch } = setup();
    bus.subscribe("job.completed", watch);
    bus.subscribe("outbox.written", watch);
    uow.run(() => {
      uow.run(() => {
        outbox.record("acc_a", "credits.low", { balance: 1 });
        bus.publish({ type: "outbox.written", accountId: "a" });
      });
      expect(seen).toEqual([]);
      outbox.record("acc_a", "job.completed", { job_id: "j" });
      bus.publish({ type: "job.completed", jobId: "j", videoId: "v", accountId: "a" });
    });
    expect(seen.map((s) => [s.event.type, s.inTransaction, s.rows])).toEqual([
      ["outbox.written", false, 2],
      ["job.completed", false, 2],
    ]);
  });

  test("a savepoint that rolls back drops its events; the transaction around it still announces its own", () => {
    const { uow, outbox, bus, seen, watch } = setup();
    bus.subscribe("outbox.written", watch);
    uow.run(() => {
      outbox.record("acc_a", "credits.low", { balance: 1 });
      bus.publish({ type: "outbox.written", accountId: "outer" });
      expect(() =>
        uow.run(() => {
          outbox.record("acc_a", "credits.exhausted", { balance: 0 });
          bus.publish({ type: "outbox.written", accountId: "inner" });
          throw new Error("savepoint fails");
        }),
      ).toThrow("savepoint fails");
    });
    expect(seen.map((s) => [s.event, s.rows])).toEqual([[{ type: "outbox.written", accountId: "outer" }, 1]]);
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

  test("a subscriber that throws after a commit neither undoes it nor reaches the publisher", () => {
    const { uow, outbox, committed, bus, errors } = setup();
    bus.subscribe("outbox.written", () => {
      throw new Error("dispatcher asleep");
    });
    expect(() =>
      uow.run(() => {
        outbox.record("acc_a", "credits.low", { balance: 1 });
        bus.publish({ type: "outbox.written", accountId: "a" });
      }),
    ).not.toThrow();
    expect(committed()).toBe(1);
    expect(errors).toEqual(["outbox.written: dispatcher asleep"]);
  });
});
