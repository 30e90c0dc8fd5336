/**
 * The async unit of work and executor contract (issue 24 §2.1–2.2), on every registered backend:
 * commit and rollback, savepoints, after-commit callbacks, late callbacks refused, concurrent
 * nested runs refused, placeholders, result types, batched inserts.
 */
import { beforeAll, describe, expect, test } from "vitest";
import { dialect, UnsupportedStatementError } from "../../../src/store/executor.ts";
import { isStoreError } from "../../../src/store/errors.ts";
import { BACKENDS, gate, type OpenedBackend, tableName } from "./backends.ts";

describe.each(BACKENDS)("unit of work and executor: $name", (backend) => {
  let s: OpenedBackend;
  beforeAll(async () => {
    if (backend.available()) s = await backend.open();
  });

  /** A table of (id, v) for one test. */
  async function table(): Promise<string> {
    const t = tableName();
    await s.exec.exec(`CREATE TABLE ${t} (id integer PRIMARY KEY, v text NOT NULL)`);
    return t;
  }
  const count = async (t: string) => (await s.exec.get<{ n: number }>(`SELECT count(*) AS n FROM ${t}`))?.n;

  test.skipIf(!backend.available())(
    "run commits what fn wrote and returns its value; a rejection rolls back",
    async () => {
      const t = await table();
      expect(s.uow.inTransaction).toBe(false);
      const value = await s.uow.run(async () => {
        expect(s.uow.inTransaction).toBe(true);
        await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 1, "a");
        return "done";
      });
      expect(value).toBe("done");
      expect(await count(t)).toBe(1);
      await expect(
        s.uow.run(async () => {
          await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 2, "b");
          throw new Error("no");
        }),
      ).rejects.toThrow("no");
      expect(await count(t)).toBe(1);
      expect(s.uow.inTransaction).toBe(false);
    },
  );

  test.skipIf(!backend.available())("a read outside the unit of work sees only what has committed", async () => {
    const t = await table();
    const wrote = gate();
    const hold = gate();
    const tx = s.uow.run(async () => {
      await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 1, "a");
      expect(await count(t)).toBe(1); // its own write, inside
      wrote.open();
      await hold.promise;
    });
    await wrote.promise;
    expect(s.uow.inTransaction).toBe(false); // this flow is outside it
    expect(await count(t)).toBe(0);
    hold.open();
    await tx;
    expect(await count(t)).toBe(1);
  });

  test.skipIf(!backend.available())("a nested run is a savepoint: its rollback keeps the outer writes", async () => {
    const t = await table();
    await s.uow.run(async () => {
      await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 1, "outer");
      await expect(
        s.uow.run(async () => {
          await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 2, "inner");
          await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 1, "duplicate"); // fails
        }),
      ).rejects.toSatisfy((e) => isStoreError(e, "unique"));
      await s.uow.run(async () => {
        await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 3, "kept");
      });
      await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 4, "after");
    });
    expect(await s.exec.all(`SELECT id, v FROM ${t} ORDER BY id`)).toEqual([
      { id: 1, v: "outer" },
      { id: 3, v: "kept" },
      { id: 4, v: "after" },
    ]);
    // A rejected outer transaction takes its committed savepoints with it.
    await expect(
      s.uow.run(async () => {
        await s.uow.run(() => s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 5, "savepoint"));
        throw new Error("outer fails");
      }),
    ).rejects.toThrow("outer fails");
    expect(await count(t)).toBe(3);
  });

  test.skipIf(!backend.available())(
    "afterCommit: at once outside; after the outermost commit inside, in order, awaited, outside the transaction",
    async () => {
      const t = await table();
      const log: string[] = [];
      s.uow.afterCommit(() => {
        log.push("now");
      });
      expect(log).toEqual(["now"]);
      await s.uow.run(async () => {
        await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 1, "a");
        s.uow.afterCommit(async () => {
          await Bun.sleep(5); // awaited before the next one starts
          log.push(`outer saw ${await count(t)}, in transaction: ${s.uow.inTransaction}`);
        });
        await s.uow.run(async () => {
          s.uow.afterCommit(async () => {
            log.push(`inner saw ${await count(t)}`);
          });
        });
        s.uow.afterCommit(() => {
          throw new Error("a broken callback");
        });
        s.uow.afterCommit(() => {
          log.push("last");
        });
        expect(log).toEqual(["now"]);
      });
      expect(log).toEqual(["now", "outer saw 1, in transaction: false", "inner saw 1", "last"]);
      expect(s.errors.map((e) => (e as Error).message)).toContain("a broken callback");
    },
  );

  test.skipIf(!backend.available())(
    "beforeCommit: inside the outermost transaction after its body, in order; a savepoint's go with it; a rejection rolls back",
    async () => {
      const t = await table();
      const log: string[] = [];
      await s.uow.run(async () => {
        s.uow.beforeCommit(async () => {
          // Part of the transaction: what it writes commits with the body's rows.
          log.push(`first, in transaction: ${s.uow.inTransaction}, saw ${await count(t)}`);
          await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 2, "before commit");
        });
        await s.uow.run(async () => {
          s.uow.beforeCommit(() => {
            log.push("kept savepoint");
          });
        });
        await s.uow
          .run(async () => {
            s.uow.beforeCommit(() => {
              log.push("rolled-back savepoint");
            });
            throw new Error("savepoint");
          })
          .catch(() => {});
        s.uow.afterCommit(() => {
          log.push("after commit");
        });
        await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 1, "body");
        expect(log).toEqual([]);
      });
      expect(log).toEqual(["first, in transaction: true, saw 1", "kept savepoint", "after commit"]);
      expect(await count(t)).toBe(2);
      await expect(
        s.uow.run(async () => {
          await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 3, "rolled back");
          s.uow.beforeCommit(() => {
            throw new Error("refused before commit");
          });
        }),
      ).rejects.toThrow("refused before commit");
      expect(await count(t)).toBe(2);
    },
  );

  test.skipIf(!backend.available())("callbacks of a rolled-back savepoint or transaction are dropped", async () => {
    const log: string[] = [];
    await s.uow.run(async () => {
      s.uow.afterCommit(() => {
        log.push("outer");
      });
      await s.uow
        .run(async () => {
          s.uow.afterCommit(() => {
            log.push("inner, rolled back");
          });
          throw new Error("savepoint");
        })
        .catch(() => {});
    });
    await expect(
      s.uow.run(async () => {
        s.uow.afterCommit(() => {
          log.push("never");
        });
        throw new Error("rollback");
      }),
    ).rejects.toThrow("rollback");
    expect(log).toEqual(["outer"]);
  });

  test.skipIf(!backend.available())(
    "a callback that outlived its unit of work is refused: store calls, run and afterCommit",
    async () => {
      const t = await table();
      const later = gate();
      let leaked: Promise<unknown>[] = [];
      await s.uow.run(async () => {
        await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 1, "a");
        // Continuations created here inherit the transaction's async context.
        leaked = [
          later.promise.then(() => s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 2, "late")),
          later.promise.then(() => s.uow.run(async () => "late run")),
          later.promise.then(() => s.uow.afterCommit(() => {})),
        ];
      });
      later.open();
      const outcomes = await Promise.allSettled(leaked);
      for (const o of outcomes) {
        expect(o.status).toBe("rejected");
        const reason = (o as PromiseRejectedResult).reason;
        expect(isStoreError(reason, "misuse")).toBe(true);
        expect(String(reason.message)).toMatch(/outlived its unit of work/);
      }
      expect(await count(t)).toBe(1);
      // This flow itself was never inside: it still works.
      await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 3, "c");
      expect(await count(t)).toBe(2);
    },
  );

  test.skipIf(!backend.available())(
    "two nested runs at once in one transaction are refused (savepoints are a stack)",
    async () => {
      const t = await table();
      await expect(
        s.uow.run(async () => {
          await Promise.all([
            s.uow.run(() => s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 1, "a")),
            s.uow.run(() => s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, 2, "b")),
          ]);
        }),
      ).rejects.toThrow(/two nested units of work at once/);
      expect(await count(t)).toBe(0);
      // Statements of one transaction may still run concurrently.
      await s.uow.run(async () => {
        await Promise.all([1, 2, 3].map((id) => s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, id, "x")));
      });
      expect(await count(t)).toBe(3);
    },
  );

  test.skipIf(!backend.available())("units of work in separate flows do not see each other's scope", async () => {
    const t = await table();
    await Promise.all(
      [1, 2, 3, 4]
        .map((id) =>
          s.uow.run(async () => {
            await s.exec.run(`INSERT INTO ${t} (id, v) VALUES (?, ?)`, id, "x");
            if (id === 3) throw new Error("only this one");
          }),
        )
        .map((p) => p.catch((e: Error) => e.message)),
    );
    expect(await s.exec.all(`SELECT id FROM ${t} ORDER BY id`)).toEqual([{ id: 1 }, { id: 2 }, { id: 4 }]);
  });

  test.skipIf(!backend.available())(
    "placeholders: ?N reused, ? after it numbered on, quotes and comments left alone",
    async () => {
      const row = await s.exec.get<Record<string, unknown>>(
        `SELECT '?' AS q, "quoted?" AS ident, ?1 AS a, ?1 AS b, ? AS c -- a comment? with ?
         /* and ?2 here */ FROM (SELECT 'x' AS "quoted?") sub`,
        "one",
        "two",
      );
      expect(row).toEqual({ q: "?", ident: "x", a: "one", b: "one", c: "two" });
      await expect(s.exec.get("SELECT ? AS a, ? AS b", 1)).rejects.toSatisfy((e) => isStoreError(e, "misuse"));
    },
  );

  test.skipIf(!backend.available())("counts and sums come back as numbers; blobs as bytes", async () => {
    const t = tableName();
    await s.exec.exec(`CREATE TABLE ${t} (id integer PRIMARY KEY, big bigint NOT NULL, f double precision, b bytea)`);
    await s.exec.run(
      `INSERT INTO ${t} (id, big, f, b) VALUES (?, ?, ?, ?)`,
      1,
      2 ** 40,
      0.5,
      new Uint8Array([1, 2, 255]),
    );
    await s.exec.run(`INSERT INTO ${t} (id, big, f, b) VALUES (?, ?, ?, ?)`, 2, 7, 1.25, null);
    const r = await s.exec.get<{ n: number; s: number; m: number; f: number }>(
      `SELECT count(*) AS n, sum(big) AS s, max(big) AS m, sum(f) AS f FROM ${t}`,
    );
    expect(r).toEqual({ n: 2, s: 2 ** 40 + 7, m: 2 ** 40, f: 1.75 });
    const b = await s.exec.get<{ b: Uint8Array }>(`SELECT b FROM ${t} WHERE id = ?`, 1);
    expect(b?.b).toBeInstanceOf(Uint8Array);
    expect([...(b?.b ?? [])]).toEqual([1, 2, 255]);
    expect(await s.exec.get(`SELECT b FROM ${t} WHERE id = ?`, 99)).toBeNull();
  });

  test.skipIf(!backend.available())("insertMany: every row, RETURNING in input order, across chunks", async () => {
    const t = tableName();
    await s.exec.exec(`CREATE TABLE ${t} (id integer PRIMARY KEY, v text NOT NULL, w double precision)`);
    const rows = Array.from({ length: 2_345 }, (_, i) => [10_000 - i, `v${i}`, i / 2]);
    const back = await s.exec.insertMany<{ id: number }>(
      { table: t, columns: ["id", "v", "w"], returning: "id" },
      rows,
    );
    expect(back.map((r) => r.id)).toEqual(rows.map((r) => r[0]));
    expect(await s.exec.get(`SELECT count(*) AS n, sum(w) AS w FROM ${t}`)).toEqual({
      n: 2_345,
      w: rows.reduce((a, r) => a + (r[2] as number), 0),
    });
    // A malformed row is refused before anything is written.
    await expect(
      s.exec.insertMany({ table: t, columns: ["id", "v", "w"] }, [
        [1, "a", 0],
        [2, "b"],
      ]),
    ).rejects.toSatisfy((e) => isStoreError(e, "misuse"));
    expect((await s.exec.get<{ n: number }>(`SELECT count(*) AS n FROM ${t}`))?.n).toBe(2_345);
    // Inside a unit of work the rows roll back with it.
    await expect(
      s.uow.run(async () => {
        await s.exec.insertMany({ table: t, columns: ["id", "v", "w"] }, [[1, "a", 0]]);
        throw new Error("undo");
      }),
    ).rejects.toThrow("undo");
    expect((await s.exec.get<{ n: number }>(`SELECT count(*) AS n FROM ${t}`))?.n).toBe(2_345);
  });

  test.skipIf(!backend.available())(
    "a dialect pair runs this backend's text; an unsupported one says why",
    async () => {
      const pair = dialect({ sqlite: "SELECT 'sqlite' AS b", pg: "SELECT 'pg' AS b" });
      expect(await s.exec.get(pair)).toEqual({ b: s.exec.backend === "sqlite" ? "sqlite" : "pg" });
      const embedded = dialect({ sqlite: "SELECT 1", pg: { unsupported: "embedded only: VACUUM INTO" } });
      if (s.exec.backend === "postgres") {
        await expect(s.exec.all(embedded)).rejects.toThrow(UnsupportedStatementError);
        await expect(s.exec.all(embedded)).rejects.toThrow(/embedded only: VACUUM INTO/);
      }
    },
  );
});
