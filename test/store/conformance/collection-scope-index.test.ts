/**
 * A search scoped to one collection finds that collection's vectors by index (migrations: SQLite
 * 016, PostgreSQL 011 `collection_scope`), not by reading every row of the account and dropping
 * the other collections'. The stores' own statements are recorded as they run (a recording
 * executor around the real one), then asked of the database's planner (EXPLAIN QUERY PLAN /
 * EXPLAIN) on an account of 20 collections; before these migrations both planners scanned frames
 * or walked `frames_account` (the account's rows) for them.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { CollectionStore } from "../../../src/collections/store.ts";
import { IndexStore } from "../../../src/indexing/store.ts";
import { PgVectorStore } from "../../../src/search/pgvector-store.ts";
import { SearchStore, type SearchScope } from "../../../src/search/store.ts";
import { type Executor, type Param, type Sql, textFor } from "../../../src/store/executor.ts";
import { BACKENDS, type OpenedBackend, postgresBackend } from "./backends.ts";
import { newTenant, newVideo, uniqueId } from "./store-fixtures.ts";

const COLLECTIONS = 20;
const FRAMES = 1_000;
const SHOTS = 50;
const MODEL = "scope-index@test";

interface Recorded {
  sql: string;
  params: Param[];
}

/** `exec` with every read (`all`, `get`) recorded as it passes; everything else goes through untouched. */
function recording(exec: Executor): { exec: Executor; reads: Recorded[] } {
  const reads: Recorded[] = [];
  const proxy = new Proxy(exec, {
    get(target, prop, receiver) {
      if (prop === "all" || prop === "get")
        return (sql: Sql, ...params: Param[]) => {
          reads.push({ sql: textFor(sql, target.backend), params });
          return prop === "all" ? target.all(sql, ...params) : target.get(sql, ...params);
        };
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { exec: proxy, reads };
}

/** The plan the backend's planner makes for a recorded statement, one line per node. */
async function planOf(exec: Executor, q: Recorded): Promise<string> {
  if (exec.backend === "sqlite") {
    const rows = await exec.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${q.sql}`, ...q.params);
    return rows.map((r) => r.detail).join("\n");
  }
  const rows = await exec.all<{ "QUERY PLAN": string }>(`EXPLAIN ${q.sql}`, ...q.params);
  return rows.map((r) => r["QUERY PLAN"]).join("\n");
}

/** The one recorded statement that reads `table` scoped by collection (the store's scoped read). */
function scopedRead(reads: Recorded[], table: "frames" | "shots"): Recorded {
  const found = reads.filter((r) => new RegExp(`FROM ${table} x\\b`).test(r.sql) && r.sql.includes("collection_id"));
  expect(found, `${table} reads recorded: ${reads.map((r) => r.sql).join(" | ")}`).toHaveLength(1);
  return found[0];
}

/** An account of COLLECTIONS collections, one video each, FRAMES frames and SHOTS shots per video (4-d vectors). */
async function fillAccount(b: OpenedBackend): Promise<{ scope: SearchScope }> {
  const tenant = await newTenant(b);
  const collections = [tenant.collection];
  for (let c = 1; c < COLLECTIONS; c++) {
    const id = uniqueId("col");
    await new CollectionStore(b.exec).insert({
      id,
      user_id: tenant.account,
      name: `collection ${id}`,
      created_at: new Date().toISOString(),
    });
    collections.push(id);
  }
  const index = new IndexStore(b.exec, false);
  for (const collectionId of collections) {
    const videoId = await newVideo(b, { account: tenant.account, collection: collectionId });
    const scope = { accountId: tenant.account, collectionId, videoId };
    const v = (i: number) => Float32Array.from([1, i % 7, i % 11, i % 13]);
    await index.replaceFrames(
      scope,
      Array.from({ length: FRAMES }, (_, i) => ({ shotIndex: Math.floor(i / 20), timestamp: i, embedding: v(i) })),
      MODEL,
    );
    await index.replaceShots(
      scope,
      Array.from({ length: SHOTS }, (_, i) => ({
        shotIndex: i,
        start: i,
        end: i + 1,
        keyframe: i,
        thumbnailPath: null,
        labels: [],
        caption: null,
        embedding: v(i),
      })),
      MODEL,
    );
  }
  // The planner's statistics, as a running install has them (autovacuum / SQLite's optimize).
  await b.exec.exec(b.exec.backend === "sqlite" ? "ANALYZE" : "ANALYZE frames, frame_vectors, shots, shot_vectors");
  return { scope: { accountId: tenant.account, collectionId: collections[7] } };
}

describe.each(BACKENDS)("$name: a collection-scoped search reads the collection's index", (backend) => {
  let b: OpenedBackend;
  let scope: SearchScope;

  beforeAll(async () => {
    if (!backend.available()) return;
    b = await backend.open();
    ({ scope } = await fillAccount(b));
  });

  it.skipIf(!backend.available())(
    "the exact path's count and read (SearchStore) use frames_collection / shots_collection",
    async () => {
      const rec = recording(b.exec);
      const store = new SearchStore(rec.exec);
      expect(await store.countInScope("frames", scope, MODEL)).toBe(FRAMES);
      expect(await store.vectorsInScope("frames", scope, MODEL)).toHaveLength(FRAMES);
      expect(await store.countInScope("shots", scope, MODEL)).toBe(SHOTS);
      const frameReads = rec.reads.filter((r) => /FROM frames x\b/.test(r.sql));
      expect(frameReads).toHaveLength(2);
      for (const q of frameReads) {
        const plan = await planOf(b.exec, q);
        expect(plan, q.sql).toContain("frames_collection");
        expect(plan).not.toContain("frames_account");
      }
      expect(await planOf(b.exec, scopedRead(rec.reads, "shots"))).toContain("shots_collection");
    },
  );
});

describe.skipIf(!postgresBackend.available())("postgres: pgvector's scoped look-ups use frames_collection", () => {
  let b: OpenedBackend;
  let scope: SearchScope;

  beforeAll(async () => {
    b = await postgresBackend.open();
    ({ scope } = await fillAccount(b));
  });

  it("countInScope and nearestExact find the collection's rows by index", async () => {
    const rec = recording(b.exec);
    const pg = new PgVectorStore(rec.exec);
    expect(await pg.countInScope("frames", scope, MODEL, 5_000)).toBe(FRAMES);
    const near = await pg.nearestExact("frames", scope, MODEL, Float32Array.from([1, 0, 0, 0]), 5, null);
    expect(near).toHaveLength(5);
    const reads = rec.reads.filter((r) => /FROM frames x\b/.test(r.sql));
    expect(reads).toHaveLength(2);
    for (const q of reads) {
      // nearestExact runs with jit off (PgVectorStore.withoutJit); EXPLAIN does not compile, so the plan is the same.
      const plan = await planOf(b.exec, q);
      expect(plan, q.sql).toContain("frames_collection");
      expect(plan).not.toMatch(/Seq Scan on frames\b/);
    }
  });
});
