/**
 * bun:sqlite's statement cache, as the SQLite store opens it (issue 27's per-request cost): a text
 * search runs more distinct statements than bun's default of 20 kept, so each request compiled
 * again the ones the previous one had evicted. SQLite only (PostgreSQL has no such cache to keep);
 * like the rest of conformance/, it runs in the `pg` project.
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openStore } from "../../../src/store/database.ts";
import { tempDir } from "../../helpers/temp.ts";

describe("the SQLite store's compiled statements", () => {
  it("stay compiled across more distinct statements than bun:sqlite's default cache of 20", async () => {
    // A text search at 100 k frames runs ~43 distinct statements over its requests (the id lists
    // padded to a few lengths, the full-text look-ups, auth, credits); with 20 kept, each request
    // compiled again the ones the previous request had evicted.
    const dir = tempDir("vsearch-statements-");
    const store = openStore(join(dir, "s.db"));
    const query = Database.prototype.query;
    try {
      const compiled = new Map<string, unknown>();
      let recompiled = 0;
      Database.prototype.query = function (this: Database, sql: string) {
        const stmt = query.call(this, sql);
        if (compiled.has(sql) && compiled.get(sql) !== stmt) recompiled++;
        compiled.set(sql, stmt);
        return stmt;
      } as typeof query;
      const texts = Array.from({ length: 60 }, (_, i) => `SELECT ${i} AS n, count(*) AS c FROM schema_migrations`);
      for (let round = 0; round < 3; round++)
        for (const [i, sql] of texts.entries())
          expect(await store.exec.get<{ n: number }>(sql)).toMatchObject({ n: i });
      expect(compiled.size).toBe(60);
      expect(recompiled).toBe(0);
    } finally {
      Database.prototype.query = query;
      store.close();
    }
  });
});
