import { describe, expect, test } from "vitest";
import { EventStore } from "../../src/events/store.ts";
import { ownStoreFiles } from "../helpers/stores.ts";

const storeFiles = ownStoreFiles("vsearch-uow-");

/** A real store file written through the seam; a second connection sees only what committed. */
function setup() {
  const dir = storeFiles.dir();
  const errors: unknown[] = [];
  const store = storeFiles.open(dir, { onError: (e) => errors.push(e) });
  const reader = storeFiles.open(dir);
  return {
    uow: store.uow,
    outbox: new EventStore(store.db),
    committed: () => new EventStore(reader.db).undispatched(100).length,
    errors,
  };
}

describe("SqliteUnitOfWork", () => {
  test("run commits what it wrote and returns fn's value; a throw rolls it back", () => {
    const { uow, outbox, committed } = setup();
    expect(uow.inTransaction).toBe(false);
    const id = uow.run(() => {
      expect(uow.inTransaction).toBe(true);
      return outbox.record("acc_a", "video.created", {});
    });
    expect(id).toMatch(/^evt_/);
    expect(committed()).toBe(1);
    expect(() =>
      uow.run(() => {
        outbox.record("acc_a", "video.created", {});
        throw new Error("no");
      }),
    ).toThrow("no");
    expect(committed()).toBe(1);
    expect(uow.inTransaction).toBe(false);
  });

  test("an async function is refused and what it wrote before its first await is rolled back", () => {
    const { uow, outbox, committed } = setup();
    expect(() =>
      uow.run(async () => {
        outbox.record("acc_a", "video.created", {});
        await Promise.resolve();
      }),
    ).toThrow(/synchronous/);
    expect(committed()).toBe(0);
  });

  test("afterCommit runs at once outside a transaction, after the outermost commit inside one, in order", () => {
    const { uow, outbox, committed } = setup();
    const log: string[] = [];
    uow.afterCommit(() => log.push("now"));
    expect(log).toEqual(["now"]);
    uow.run(() => {
      outbox.record("acc_a", "video.created", {});
      uow.afterCommit(() => log.push(`outer saw ${committed()}`));
      uow.run(() => uow.afterCommit(() => log.push(`inner saw ${committed()}`)));
      expect(log).toEqual(["now"]);
    });
    expect(log).toEqual(["now", "outer saw 1", "inner saw 1"]);
  });

  test("callbacks of a rolled-back savepoint or transaction are dropped", () => {
    const { uow } = setup();
    const log: string[] = [];
    uow.run(() => {
      uow.afterCommit(() => log.push("outer"));
      try {
        uow.run(() => {
          uow.afterCommit(() => log.push("inner"));
          throw new Error("savepoint");
        });
      } catch {
        // the outer transaction goes on
      }
    });
    expect(() =>
      uow.run(() => {
        uow.afterCommit(() => log.push("doomed"));
        throw new Error("rollback");
      }),
    ).toThrow("rollback");
    expect(log).toEqual(["outer"]);
  });

  test("a callback that throws is reported; the others still run and the caller does not see it", () => {
    const { uow, errors } = setup();
    const log: string[] = [];
    expect(() =>
      uow.run(() => {
        uow.afterCommit(() => {
          throw new Error("subscriber");
        });
        uow.afterCommit(() => log.push("second"));
      }),
    ).not.toThrow();
    expect(log).toEqual(["second"]);
    expect(errors.map((e) => (e as Error).message)).toEqual(["subscriber"]);
  });

  test("immediate takes the write lock at the start, so a second writer waits or fails instead of interleaving", () => {
    const dir = storeFiles.dir();
    const a = storeFiles.open(dir);
    const b = storeFiles.open(dir, { busyTimeoutMs: 0 });
    a.uow.run(
      () => {
        // A deferred transaction would hold no lock yet; this one already does.
        expect(() => b.uow.run(() => new EventStore(b.db).record("acc_b", "video.created", {}))).toThrow(
          /locked|busy/i,
        );
      },
      { immediate: true },
    );
    b.uow.run(() => new EventStore(b.db).record("acc_b", "video.created", {}));
    expect(new EventStore(a.db).undispatched(10).length).toBe(1);
  });
});
