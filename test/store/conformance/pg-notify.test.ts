/**
 * LISTEN / NOTIFY (src/store/pg/notify.ts, for issue 26): a notification published inside a unit
 * of work arrives after its commit and never after a rollback; the subscription comes back after
 * its connection is terminated, with `onListen` called again (where a subscriber re-reads what it
 * may have missed).
 */
import { beforeAll, describe, expect, test } from "vitest";
import { isStoreError } from "../../../src/store/errors.ts";
import { listen, MAX_NOTIFY_PAYLOAD_BYTES, publish, type Subscription } from "../../../src/store/pg/notify.ts";
import { pgAvailable, pgTest } from "../../pg/database.ts";
import { until } from "../../helpers/wait.ts";
import { gate, openPg } from "./backends.ts";

type Store = Awaited<ReturnType<typeof openPg>>;

describe.skipIf(!pgAvailable())("LISTEN / NOTIFY", () => {
  let s: Store;
  let sub: Subscription;
  const got: string[] = [];
  let listens = 0;
  const errors: unknown[] = [];

  beforeAll(async () => {
    s = await openPg();
    sub = await listen(s.pool, "vs_test", {
      onNotify: (payload) => {
        got.push(payload);
      },
      onListen: () => {
        listens++;
      },
      onError: (e) => errors.push(e),
    });
  });

  /**
   * Publishes a marker outside any transaction and waits for it: notifications arrive in commit
   * order on the listening connection, so once the marker is in, everything committed before it is.
   */
  let markers = 0;
  async function drained(): Promise<void> {
    const marker = `marker-${++markers}`;
    await publish(s.exec, "vs_test", marker);
    expect(await until(async () => got.includes(marker))).toBe(true);
  }

  test("published inside a unit of work: delivered after the commit, not before", async () => {
    const published = gate();
    const commit = gate();
    const tx = s.uow.run(async () => {
      await publish(s.exec, "vs_test", "after-commit");
      published.open();
      await commit.promise;
    });
    await published.promise;
    await drained(); // the marker, committed later, arrives; the open transaction's does not
    expect(got).not.toContain("after-commit");
    commit.open();
    await tx;
    expect(await until(async () => got.includes("after-commit"))).toBe(true);
    expect(listens).toBe(1);
  });

  test("published inside a unit of work that rolls back: never delivered", async () => {
    await expect(
      s.uow.run(async () => {
        await publish(s.exec, "vs_test", "rolled-back");
        throw new Error("undo");
      }),
    ).rejects.toThrow("undo");
    await drained();
    expect(got).not.toContain("rolled-back");
  });

  test("after its connection is terminated the subscription reconnects and onListen runs again", async () => {
    const pid = sub.pid();
    expect(pid).toBeGreaterThan(0);
    await pgTest().admin`SELECT pg_terminate_backend(${pid ?? 0})`;
    expect(await until(async () => listens === 2, 30_000)).toBe(true);
    expect(sub.pid()).not.toBe(pid);
    await publish(s.exec, "vs_test", "after-reconnect");
    expect(await until(async () => got.includes("after-reconnect"))).toBe(true);
    expect(errors).toEqual([]);
  });

  test("payloads over PostgreSQL's limit and odd channel names are refused before sending", async () => {
    await expect(publish(s.exec, "vs_test", "x".repeat(MAX_NOTIFY_PAYLOAD_BYTES + 1))).rejects.toSatisfy((e) =>
      isStoreError(e, "misuse"),
    );
    await expect(publish(s.exec, "vs test; drop", "x")).rejects.toSatisfy((e) => isStoreError(e, "misuse"));
    await publish(s.exec, "vs_test", "é".repeat(MAX_NOTIFY_PAYLOAD_BYTES / 2 - 1)); // multi-byte, under the limit
  });

  test("unlisten stops delivery", async () => {
    const other: string[] = [];
    const second = await listen(s.pool, "vs_other", { onNotify: (p) => void other.push(p) });
    await publish(s.exec, "vs_other", "one");
    expect(await until(async () => other.includes("one"))).toBe(true);
    await second.unlisten();
    await publish(s.exec, "vs_other", "two");
    await drained();
    expect(other).toEqual(["one"]);
  });
});
