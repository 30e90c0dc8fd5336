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
  const outbox = new EventStore(store.exec);
  const committed = async () => (await new EventStore(reader.exec).undispatched(100)).length;
  const errors: string[] = [];
  const bus = new EventBus(store.uow, (type, err) => errors.push(`${type}: ${(err as Error).message}`));
  const seen: { event: DomainEvent; inTransaction: boolean; rows: number }[] = [];
  const watch = async (e: DomainEvent) => {
    seen.push({ event: e, inTransaction: store.uow.inTransaction, rows: await committed() });
  };
  return { uow: store.uow, outbox, committed, bus, seen, errors, watch };
}

/** Resolves once the bus has delivered an event of `type` to every subscriber before this one. */
function delivered(bus: EventBus, type: "videos.deleted" | "outbox.written"): Promise<void> {
  return new Promise((resolve) => bus.subscribe(type, () => resolve()));
}

describe("EventBus on the unit of work", () => {
  test("an event published inside a transaction reaches subscribers only after it committed", async () => {
    const { uow, outbox, bus, seen, watch } = setup();
    bus.subscribe("video.content_changed", watch);
    await uow.run(async () => {
      await outbox.record("acc_a", "video.created", { video_id: "v1" });
      bus.publish({ type: "video.content_changed", videoId: "v1" });
      expect(seen).toEqual([]); // held while the transaction is open
    });
    expect(seen).toEqual([{ event: { type: "video.content_changed", videoId: "v1" }, inTransaction: false, rows: 1 }]);
  });

  test("a rolled-back transaction announces nothing, also what a successful savepoint inside it published", async () => {
    const { uow, outbox, committed, bus, seen, watch } = setup();
    bus.subscribe("outbox.written", watch);
    await expect(
      uow.run(async () => {
        await uow.run(async () => {
          await outbox.record("acc_a", "credits.low", { balance: 1 });
          bus.publish({ type: "outbox.written", accountId: "a" });
        });
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(seen).toEqual([]);
    expect(await committed()).toBe(0); // the savepoint's row went with the transaction
    // The bus is usable afterwards: nothing left held.
    const done = delivered(bus, "outbox.written");
    bus.publish({ type: "outbox.written", accountId: "b" });
    await done;
    expect(seen.map((s) => s.event)).toEqual([{ type: "outbox.written", accountId: "b" }]);
  });

  test("nested commits deliver once, in publish order, when the outer one commits", async () => {
    const { uow, outbox, bus, seen, watch } = setup();
    bus.subscribe("job.completed", watch);
    bus.subscribe("outbox.written", watch);
    await uow.run(async () => {
      await uow.run(async () => {
        await outbox.record("acc_a", "credits.low", { balance: 1 });
        bus.publish({ type: "outbox.written", accountId: "a" });
      });
      expect(seen).toEqual([]);
      await outbox.record("acc_a", "job.completed", { job_id: "j" });
      bus.publish({ type: "job.completed", jobId: "j", videoId: "v", accountId: "a" });
    });
    expect(seen.map((s) => [s.event.type, s.inTransaction, s.rows])).toEqual([
      ["outbox.written", false, 2],
      ["job.completed", false, 2],
    ]);
  });

  test("a savepoint that rolls back drops its events; the transaction around it still announces its own", async () => {
    const { uow, outbox, bus, seen, watch } = setup();
    bus.subscribe("outbox.written", watch);
    await uow.run(async () => {
      await outbox.record("acc_a", "credits.low", { balance: 1 });
      bus.publish({ type: "outbox.written", accountId: "outer" });
      await expect(
        uow.run(async () => {
          await outbox.record("acc_a", "credits.exhausted", { balance: 0 });
          bus.publish({ type: "outbox.written", accountId: "inner" });
          throw new Error("savepoint fails");
        }),
      ).rejects.toThrow("savepoint fails");
    });
    expect(seen.map((s) => [s.event, s.rows])).toEqual([[{ type: "outbox.written", accountId: "outer" }, 1]]);
  });

  test("async subscribers run one after another in subscription order, and run resolves once all have", async () => {
    const { uow, outbox, bus } = setup();
    const log: string[] = [];
    bus.subscribe("outbox.written", async (e) => {
      log.push(`first starts ${e.accountId}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
      log.push(`first ends ${e.accountId}`);
    });
    bus.subscribe("outbox.written", async (e) => {
      log.push(`second ${e.accountId}`);
    });
    await uow.run(async () => {
      await outbox.record("acc_a", "credits.low", { balance: 1 });
      bus.publish({ type: "outbox.written", accountId: "a" });
      bus.publish({ type: "outbox.written", accountId: "b" });
    });
    // Each event's subscribers in order, the slow one finished before the next started; both events
    // in publish order; all of it done when the publisher's run resolved.
    expect(log).toEqual(["first starts a", "first ends a", "second a", "first starts b", "first ends b", "second b"]);
  });

  test("outside a transaction the event is delivered at once: the first subscriber starts during publish", async () => {
    const { bus } = setup();
    const log: string[] = [];
    bus.subscribe("videos.deleted", async (e) => {
      log.push(`started ${e.videoIds.join(",")}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
      log.push("ended");
    });
    const done = delivered(bus, "videos.deleted");
    bus.publish({ type: "videos.deleted", videoIds: ["a"] });
    expect(log).toEqual(["started a"]);
    await done;
    expect(log).toEqual(["started a", "ended"]);
  });

  test("only subscribers of the type run; one that throws is reported and the others still run", async () => {
    const { bus, errors } = setup();
    const got: string[] = [];
    bus.subscribe("videos.deleted", () => {
      throw new Error("cache gone");
    });
    bus.subscribe("videos.deleted", async () => {
      throw new Error("index gone");
    });
    bus.subscribe("videos.deleted", (e) => {
      got.push(e.videoIds.join(","));
    });
    bus.subscribe("job.retried", (e) => {
      got.push(`retried ${e.jobId}`);
    });
    const done = delivered(bus, "videos.deleted");
    expect(() => bus.publish({ type: "videos.deleted", videoIds: ["a", "b"] })).not.toThrow();
    await done;
    expect(got).toEqual(["a,b"]);
    expect(errors).toEqual(["videos.deleted: cache gone", "videos.deleted: index gone"]);
  });

  test("a subscriber that throws after a commit neither undoes it nor reaches the publisher", async () => {
    const { uow, outbox, committed, bus, errors } = setup();
    bus.subscribe("outbox.written", () => {
      throw new Error("dispatcher asleep");
    });
    bus.subscribe("outbox.written", async () => {
      throw new Error("dispatcher gone");
    });
    await expect(
      uow.run(async () => {
        await outbox.record("acc_a", "credits.low", { balance: 1 });
        bus.publish({ type: "outbox.written", accountId: "a" });
      }),
    ).resolves.toBeUndefined();
    expect(await committed()).toBe(1);
    expect(errors).toEqual(["outbox.written: dispatcher asleep", "outbox.written: dispatcher gone"]);
  });
});
