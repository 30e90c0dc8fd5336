import { describe, expect, test } from "vitest";
import { EventStore } from "../../src/events/store.ts";
import { StoreError } from "../../src/store/errors.ts";
import { ownStoreFiles } from "../helpers/stores.ts";

const storeFiles = ownStoreFiles("vsearch-uow-");

/** A real store file written through the seam; a second connection sees only what committed. */
function setup() {
  const dir = storeFiles.dir();
  const errors: unknown[] = [];
  const store = storeFiles.open(dir, { onError: (e) => errors.push(e) });
  const other = storeFiles.open(dir);
  const outbox = new EventStore(store.exec);
  return {
    uow: store.uow,
    outbox,
    /** Events committed, as another connection to the file sees them. */
    committed: async () => (await new EventStore(other.exec).undispatched(100)).length,
    /** Events as this store sees them outside any unit of work (its reader: the last commit). */
    readOutside: async () => (await outbox.undispatched(100)).length,
    errors,
  };
}

/** A promise and the function that resolves it: to hold a flow at a known point. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe("the SQLite unit of work", () => {
  test("run commits what it wrote when fn resolves and returns fn's value; a rejection rolls it back", async () => {
    const { uow, outbox, committed } = setup();
    expect(uow.inTransaction).toBe(false);
    const id = await uow.run(async () => {
      expect(uow.inTransaction).toBe(true);
      return await outbox.record("acc_a", "video.created", {});
    });
    expect(id).toMatch(/^evt_/);
    expect(await committed()).toBe(1);
    await expect(
      uow.run(async () => {
        await outbox.record("acc_a", "video.created", {});
        throw new Error("no");
      }),
    ).rejects.toThrow("no");
    expect(await committed()).toBe(1);
    expect(uow.inTransaction).toBe(false);
  });

  test("an async fn is one transaction across its awaits: all of it commits, or none when it rejects late", async () => {
    const { uow, outbox, committed } = setup();
    await uow.run(async () => {
      await outbox.record("acc_a", "video.created", {});
      await new Promise((resolve) => setTimeout(resolve, 5));
      await outbox.record("acc_a", "video.created", {});
      // The transaction's own view holds both writes.
      expect((await outbox.undispatched(10)).length).toBe(2);
    });
    expect(await committed()).toBe(2);
    await expect(
      uow.run(async () => {
        await outbox.record("acc_a", "video.created", {});
        await new Promise((resolve) => setTimeout(resolve, 5));
        await outbox.record("acc_a", "video.created", {});
        throw new Error("late");
      }),
    ).rejects.toThrow("late");
    expect(await committed()).toBe(2);
  });

  test("a nested run is a savepoint: its rejection rolls back only its own writes", async () => {
    const { uow, outbox, committed } = setup();
    await uow.run(async () => {
      await outbox.record("acc_a", "video.created", {});
      await expect(
        uow.run(async () => {
          await outbox.record("acc_inner", "video.created", {});
          throw new Error("savepoint");
        }),
      ).rejects.toThrow("savepoint");
      expect(uow.inTransaction).toBe(true);
      await uow.run(async () => {
        await outbox.record("acc_b", "video.created", {});
      });
    });
    expect(await committed()).toBe(2);
    expect((await outbox.list()).map((e) => e.account_id)).toEqual(["acc_a", "acc_b"]);
  });

  test("afterCommit runs at once outside a transaction, after the outermost commit inside one, in order, before run resolves", async () => {
    const { uow, outbox, committed } = setup();
    const log: string[] = [];
    uow.afterCommit(() => {
      log.push("now");
    });
    expect(log).toEqual(["now"]);
    await uow.run(async () => {
      await outbox.record("acc_a", "video.created", {});
      uow.afterCommit(async () => {
        log.push(`outer saw ${await committed()}`);
      });
      await uow.run(async () =>
        uow.afterCommit(async () => {
          log.push(`inner saw ${await committed()}`);
        }),
      );
      expect(log).toEqual(["now"]);
    });
    // Both callbacks saw the commit, ran in registration order, and had finished when run resolved.
    expect(log).toEqual(["now", "outer saw 1", "inner saw 1"]);
  });

  test("callbacks of a rolled-back savepoint or transaction are dropped", async () => {
    const { uow } = setup();
    const log: string[] = [];
    await uow.run(async () => {
      uow.afterCommit(() => {
        log.push("outer");
      });
      await expect(
        uow.run(async () => {
          uow.afterCommit(() => {
            log.push("inner");
          });
          throw new Error("savepoint");
        }),
      ).rejects.toThrow("savepoint");
    });
    await expect(
      uow.run(async () => {
        uow.afterCommit(() => {
          log.push("doomed");
        });
        throw new Error("rollback");
      }),
    ).rejects.toThrow("rollback");
    expect(log).toEqual(["outer"]);
  });

  test("a callback that throws is reported; the others still run and the caller does not see it", async () => {
    const { uow, errors } = setup();
    const log: string[] = [];
    await expect(
      uow.run(async () => {
        uow.afterCommit(() => {
          throw new Error("subscriber");
        });
        uow.afterCommit(async () => {
          throw new Error("async subscriber");
        });
        uow.afterCommit(() => {
          log.push("third");
        });
      }),
    ).resolves.toBeUndefined();
    expect(log).toEqual(["third"]);
    expect(errors.map((e) => (e as Error).message)).toEqual(["subscriber", "async subscriber"]);
  });

  test("a store call from a flow that outlived its transaction throws a misuse error and writes nothing", async () => {
    const { uow, outbox, committed } = setup();
    const held = gate();
    let late!: Promise<string>;
    await uow.run(async () => {
      // Started inside the unit of work and not awaited: it carries the transaction's scope.
      late = (async () => {
        await held.opened;
        return await outbox.record("acc_late", "video.created", {});
      })();
    });
    held.open();
    const err = await late.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).kind).toBe("misuse");
    expect(await committed()).toBe(0);
    // Outside the leaked flow the store works as before.
    await outbox.record("acc_a", "video.created", {});
    expect(await committed()).toBe(1);
  });

  test("two nested runs at once in one transaction are refused", async () => {
    const { uow, outbox, committed } = setup();
    await expect(
      uow.run(async () => {
        await Promise.all([
          uow.run(async () => await outbox.record("acc_a", "video.created", {})),
          uow.run(async () => await outbox.record("acc_b", "video.created", {})),
        ]);
      }),
    ).rejects.toMatchObject({ kind: "misuse" });
    expect(await committed()).toBe(0);
  });

  test("a write of another flow waits for an open transaction; a read outside sees only the last commit", async () => {
    const { uow, outbox, committed, readOutside } = setup();
    const held = gate();
    const entered = gate();
    const order: string[] = [];
    const tx = uow.run(async () => {
      await outbox.record("acc_tx", "video.created", {});
      entered.open();
      await held.opened;
      await outbox.record("acc_tx", "video.created", {});
      order.push("tx done");
    });
    await entered.opened;
    // Started while the transaction is open, concurrently with it.
    const outside = outbox.record("acc_other", "video.created", {}).then(() => order.push("outside write"));
    const otherTx = uow.run(async () => {
      await outbox.record("acc_other_tx", "video.created", {});
      order.push("other tx");
    });
    // Reads outside run at once against the last commit: the open transaction's write is not there.
    expect(await readOutside()).toBe(0);
    expect(await committed()).toBe(0);
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 2));
    expect(order).toEqual([]);
    held.open();
    await Promise.all([tx, outside, otherTx]);
    expect(order).toEqual(["tx done", "outside write", "other tx"]);
    expect(await readOutside()).toBe(4);
    // The transaction's writes sit together, before the writes that waited for it.
    expect((await outbox.list()).map((e) => e.account_id)).toEqual(["acc_tx", "acc_tx", "acc_other", "acc_other_tx"]);
  });

  test("a unit of work takes the write lock at its start (BEGIN IMMEDIATE): another connection's writer fails busy instead of interleaving", async () => {
    const dir = storeFiles.dir();
    const a = storeFiles.open(dir);
    const b = storeFiles.open(dir, { busyTimeoutMs: 0 });
    const bEvents = new EventStore(b.exec);
    await a.uow.run(async () => {
      // A deferred transaction would hold no lock yet: nothing has been written in this one.
      await expect(b.uow.run(async () => await bEvents.record("acc_b", "video.created", {}))).rejects.toMatchObject({
        kind: "busy",
      });
      await expect(bEvents.record("acc_b", "video.created", {})).rejects.toMatchObject({ kind: "busy" });
    });
    await b.uow.run(async () => await bEvents.record("acc_b", "video.created", {}));
    expect((await new EventStore(a.exec).undispatched(10)).length).toBe(1);
  });
});
