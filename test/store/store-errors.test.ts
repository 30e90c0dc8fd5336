/**
 * src/store/errors.ts on SQLite: real bun:sqlite errors, provoked through store methods, classified
 * by code into the kinds services will act on (a unique violation is a 409 by its kind, never by
 * the words in its message). The PostgreSQL side: test/store/conformance/pg-errors.test.ts.
 */
import { describe, expect, test } from "vitest";
import { AccountStore } from "../../src/accounts/store.ts";
import { StoreError, sqliteKind, toStoreError } from "../../src/store/errors.ts";
import { openStores, ownStoreFiles } from "../helpers/stores.ts";

const account = (id: string, extra: Record<string, unknown> = {}) =>
  ({
    id,
    name: `Account ${id}`,
    plan: "enterprise",
    credits_balance: null,
    created_at: "2026-01-01",
    ...extra,
  }) as never;
const user = (id: string, accountId: string, email: string) =>
  ({ id, account_id: accountId, email, password_hash: "x", role: "member", created_at: "2026-01-01" }) as never;

/** The error `fn` rejects with, classified; the executor already turned the driver's error into a StoreError. */
async function classified(fn: () => Promise<unknown>) {
  try {
    await fn();
  } catch (e) {
    if (!(e instanceof StoreError)) throw new Error(`a driver error left the store unclassified: ${String(e)}`);
    const s = toStoreError(e);
    return s && { kind: s.kind, code: s.code, constraint: s.constraint };
  }
  throw new Error("expected a throw");
}

describe("store errors from bun:sqlite", () => {
  const files = ownStoreFiles("vsearch-store-errors-");

  test("unique (primary key, UNIQUE COLLATE NOCASE), foreign key, check and not-null violations by kind", async () => {
    const s = openStores(files.dir());
    await s.accounts.insertAccount(account("acc_a"));
    expect(await classified(async () => await s.accounts.insertAccount(account("acc_a")))).toEqual({
      kind: "unique",
      code: "SQLITE_CONSTRAINT_PRIMARYKEY",
      constraint: "accounts.id",
    });
    await s.accounts.insertUser(user("mbr_1", "acc_a", "a@example.com"));
    expect(await classified(async () => await s.accounts.insertUser(user("mbr_2", "acc_a", "A@Example.com")))).toEqual({
      kind: "unique",
      code: "SQLITE_CONSTRAINT_UNIQUE",
      constraint: "users.email",
    });
    expect(
      await classified(async () => await s.accounts.insertUser(user("mbr_3", "acc_missing", "b@example.com"))),
    ).toMatchObject({
      kind: "foreign_key",
      code: "SQLITE_CONSTRAINT_FOREIGNKEY",
    });
    expect(
      await classified(async () => await s.accounts.insertAccount(account("acc_b", { plan: "gold" }))),
    ).toMatchObject({
      kind: "constraint",
      code: "SQLITE_CONSTRAINT_CHECK",
    });
    expect(await classified(async () => await s.accounts.insertAccount(account("acc_c", { name: null })))).toEqual({
      kind: "constraint",
      code: "SQLITE_CONSTRAINT_NOTNULL",
      constraint: "accounts.name",
    });
    s.close();
  });

  test("a write while another connection holds the write lock is busy", async () => {
    const dir = files.dir();
    const holder = files.open(dir);
    const mine = new AccountStore(holder.exec);
    const other = new AccountStore(files.open(dir, { busyTimeoutMs: 0 }).exec);
    const outcome = await holder.uow.run(async () => {
      await mine.insertAccount(account("acc_held"));
      return await classified(async () => await other.insertAccount(account("acc_other")));
    });
    expect(outcome).toMatchObject({ kind: "busy", code: "SQLITE_BUSY" });
  });

  test("every SQLite result code family maps to its kind; other errors are not store errors", () => {
    const table: [string, string][] = [
      ["SQLITE_CONSTRAINT_UNIQUE", "unique"],
      ["SQLITE_CONSTRAINT_PRIMARYKEY", "unique"],
      ["SQLITE_CONSTRAINT_FOREIGNKEY", "foreign_key"],
      ["SQLITE_CONSTRAINT_TRIGGER", "constraint"],
      ["SQLITE_BUSY_SNAPSHOT", "busy"],
      ["SQLITE_LOCKED_SHAREDCACHE", "busy"],
      ["SQLITE_FULL", "storage_full"],
      ["SQLITE_IOERR_WRITE", "unavailable"],
      ["SQLITE_CANTOPEN", "unavailable"],
      ["SQLITE_READONLY", "misuse"],
      ["SQLITE_ERROR", "misuse"],
      ["SQLITE_CORRUPT", "other"],
    ];
    expect(table.map(([code]) => [code, sqliteKind(code)])).toEqual(table);
    expect(toStoreError(new Error("not a database error"))).toBeNull();
    expect(toStoreError(Object.assign(new Error("disk"), { code: "ENOSPC" }))).toBeNull();
  });
});
