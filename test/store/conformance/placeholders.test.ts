/**
 * The `?` / `?N` → `$N` rewrite of the PostgreSQL executor (src/store/pg/placeholders.ts) on the
 * texts that trip naive rewrites. Pure: runs with or without a server.
 */
import { describe, expect, test } from "vitest";
import { isStoreError } from "../../../src/store/errors.ts";
import { rewritePlaceholders } from "../../../src/store/pg/placeholders.ts";
import { describeUrl, versionAtLeast } from "../../../src/store/pg/open.ts";

const rw = (sql: string) => rewritePlaceholders(sql);

describe("placeholder rewrite", () => {
  test("positional and numbered, numbered as SQLite numbers them", () => {
    expect(rw("SELECT * FROM t WHERE a = ? AND b = ?")).toEqual({
      text: "SELECT * FROM t WHERE a = $1 AND b = $2",
      count: 2,
    });
    expect(rw("WHERE (?1 IS NULL OR a = ?1) AND (?2 IS NULL OR b = ?2)")).toEqual({
      text: "WHERE ($1 IS NULL OR a = $1) AND ($2 IS NULL OR b = $2)",
      count: 2,
    });
    // A bare ? after ?3 is ?4 (one more than the largest so far), as in SQLite.
    expect(rw("VALUES (?3, ?, ?1)")).toEqual({ text: "VALUES ($3, $4, $1)", count: 4 });
    expect(rw("SELECT 1")).toEqual({ text: "SELECT 1", count: 0 });
  });

  test("strings, identifiers, dollar quotes and comments keep their question marks", () => {
    const cases: [string, string][] = [
      ["SELECT 'a?b', ? FROM t", "SELECT 'a?b', $1 FROM t"],
      ["SELECT 'it''s ?', ?", "SELECT 'it''s ?', $1"],
      ["SELECT E'\\' ?', ?", "SELECT E'\\' ?', $1"],
      ['SELECT "odd?col", ? FROM t', 'SELECT "odd?col", $1 FROM t'],
      ["SELECT ? -- why? because\n, ?", "SELECT $1 -- why? because\n, $2"],
      ["SELECT /* a /* nested? */ still? */ ?", "SELECT /* a /* nested? */ still? */ $1"],
      ["DO $$ BEGIN PERFORM '?'; END $$; SELECT ?", "DO $$ BEGIN PERFORM '?'; END $$; SELECT $1"],
      ["SELECT $fn$ ? $fn$, ?", "SELECT $fn$ ? $fn$, $1"],
      ["SELECT x::text, ?::bigint", "SELECT x::text, $1::bigint"],
    ];
    for (const [sql, text] of cases) expect(rw(sql).text, sql).toBe(text);
  });

  test("jsonb's ?| and ?& operators and ?0 are refused with the way out", () => {
    for (const sql of ["SELECT j ?| array['a']", "SELECT j ?& array['a']", "SELECT ?0"]) {
      let err: unknown;
      try {
        rw(sql);
      } catch (e) {
        err = e;
      }
      expect(isStoreError(err, "misuse"), sql).toBe(true);
    }
    expect(() => rw("SELECT j ?| array['a']")).toThrow(/jsonb_exists_any/);
  });

  test("the same text is rewritten once (cached)", () => {
    const sql = `SELECT ? AS cached_${Date.now()}`;
    expect(rw(sql)).toBe(rw(sql));
  });
});

describe("open helpers", () => {
  test("versions compare numerically; URLs are described without credentials", () => {
    expect(versionAtLeast("0.8.0", "0.8.0")).toBe(true);
    expect(versionAtLeast("0.10.1", "0.8.0")).toBe(true);
    expect(versionAtLeast("0.7.4", "0.8.0")).toBe(false);
    expect(versionAtLeast("1.0", "0.8.0")).toBe(true);
    expect(describeUrl("postgres://u:secret@db.example:5433/vsearch?sslmode=require")).toBe("db.example:5433/vsearch");
    expect(describeUrl("not a url")).not.toContain("not a url");
  });
});
