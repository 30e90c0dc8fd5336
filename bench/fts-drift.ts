/**
 * Full-text search on PostgreSQL against the embedded store (issue 25): the same corpus and the
 * same queries through the stores search uses, FTS5 + bm25 on SQLite, tsvector + ts_rank on
 * PostgreSQL. Reports, per query kind: whether the hit sets agree (all hits when a query has at
 * most LEXICAL_K of them), the overlap of the top 10 by each backend's own ranking, and the drift
 * of the calibrated score (search/lexical-mode.ts: the IDF share of the query a hit holds) over
 * the rows both return.
 *
 * The corpus: transcript-like segments of 6–18 words drawn from the vocabulary of the real
 * transcripts in ../shared/media/speech/transcripts.tsv (Zipf-weighted, fixed seed), or from a
 * built-in word list when that file is absent.
 *
 * Run: node_modules/.bin/bun bench/fts-drift.ts [--segments 20000] [--pg postgres://…]
 *   without --pg a throw-away cluster is started (test/pg/cluster.ts; PostgreSQL 15 + pgvector).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { AccountStore } from "../src/accounts/store.ts";
import { CollectionStore } from "../src/collections/store.ts";
import { IndexStore } from "../src/indexing/store.ts";
import { buildFtsQuery } from "../src/search/fts.ts";
import { LEXICAL_K } from "../src/search/lexical-mode.ts";
import { SearchStore } from "../src/search/store.ts";
import type { Executor } from "../src/store/executor.ts";
import { openPgStore } from "../src/store/pg/open.ts";
import { openStore } from "../src/store/database.ts";
import { VideoStore } from "../src/videos/store.ts";
import { findPostgres, startCluster } from "../test/pg/cluster.ts";
import { videoRow } from "../test/store/conformance/store-fixtures.ts";

const arg = (name: string, dflt?: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const SEGMENTS = Number(arg("--segments", "20000"));

let seed = 42;
const rand = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};

function vocabulary(): string[] {
  const tsv = join(import.meta.dirname, "..", "..", "shared", "media", "speech", "transcripts.tsv");
  const text = existsSync(tsv)
    ? readFileSync(tsv, "utf8")
        .split("\n")
        .slice(1)
        .map((l) => l.split("\t")[1] ?? "")
        .join(" ")
    : "the budget meeting starts at nine deployment of the new menu was postponed we are deploying to production tonight running late research team café crème brûlée";
  const counts = new Map<string, number>();
  for (const w of text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? []) counts.set(w, (counts.get(w) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([w]) => w);
}

const VOCAB = vocabulary();
/** Zipf over the vocabulary's frequency order. */
const word = () => VOCAB[Math.min(VOCAB.length - 1, Math.floor(VOCAB.length ** rand()) - 1)];
const segment = () => {
  const n = 6 + Math.floor(rand() * 13);
  const words = Array.from({ length: n }, word);
  words[0] = words[0][0].toUpperCase() + words[0].slice(1);
  return `${words.join(" ")}.`;
};

const corpus = Array.from({ length: SEGMENTS }, segment);
const rare = () => VOCAB[Math.floor(VOCAB.length * (0.3 + 0.7 * rand()))];
const KINDS: Record<string, () => string> = {
  "one word": () => rare(),
  "two words": () => `${rare()} ${word()}`,
  "three words": () => `${rare()} ${rare()} ${word()}`,
  phrase: () => {
    const s = corpus[Math.floor(rand() * corpus.length)].replace(/\./, "").split(" ");
    const i = Math.floor(rand() * Math.max(1, s.length - 2));
    return `"${s.slice(i, i + 2).join(" ")}"`;
  },
  prefix: () => `${rare().slice(0, 4)}*`,
  "frequent words": () => `${VOCAB[Math.floor(rand() * 10)]} ${VOCAB[Math.floor(rand() * 20)]}`,
};
const QUERIES_PER_KIND = 40;

async function seed_(db: Executor): Promise<{ accountId: string; collectionId: string }> {
  const accountId = "acct_bench";
  const collectionId = "col_bench";
  const now = new Date().toISOString();
  await new AccountStore(db).insertAccount({
    id: accountId,
    name: "bench",
    plan: "enterprise",
    credits_balance: null,
    created_at: now,
  });
  await new CollectionStore(db).insert({ id: collectionId, user_id: accountId, name: "bench", created_at: now });
  const index = new IndexStore(db, false);
  const videos = new VideoStore(db);
  const perVideo = 200;
  for (let v = 0; v * perVideo < corpus.length; v++) {
    const videoId = `vid_${v}`;
    await videos.insert(
      videoRow({ account: accountId, collection: collectionId }, { id: videoId, status: "ready", has_audio: 1 }),
    );
    const part = corpus.slice(v * perVideo, (v + 1) * perVideo);
    await index.replaceTranscript(
      { videoId, accountId, collectionId },
      part.map((text, i) => ({ start: i * 5, end: i * 5 + 5, text })),
      "whisper-bench",
    );
  }
  return { accountId, collectionId };
}

interface Answer {
  hits: { text: string; key: string; score: number }[];
  complete: boolean;
}

/** The query's hits by this backend's ranking, each with its calibrated score (lexical-mode.ts). */
async function answer(db: Executor, scope: { accountId: string; collectionId: string }, q: string): Promise<Answer> {
  const search = new SearchStore(db);
  const fts = buildFtsQuery(q)!;
  const n = await search.transcriptCount(scope.accountId);
  const idf = (df: number) => Math.log(1 + (n - Math.max(df, 1) + 0.5) / (Math.max(df, 1) + 0.5));
  // As search/lexical-mode.ts: the units' IDF first (PostgreSQL ranks by it), then the hits.
  const weights = await Promise.all(
    fts.units.map(async (u) => idf(await search.transcriptDocFreq(scope.accountId, u))),
  );
  const hits = await search.transcriptSearch(
    scope,
    fts.match,
    LEXICAL_K,
    fts.units.length > 1 ? fts.units.map((u, i) => ({ match: u, weight: weights[i] })) : [],
  );
  const ids = hits.map((h) => h.id);
  const units = await Promise.all(
    fts.units.map(async (u, i) => ({ idf: weights[i], matching: await search.transcriptMatching(u, ids) })),
  );
  const total = units.reduce((s, u) => s + u.idf, 0);
  return {
    complete: hits.length < LEXICAL_K,
    hits: hits.map((h) => ({
      text: h.text,
      key: `${h.video_id}@${h.start_secs}`,
      score: units.reduce((s, u) => s + (u.matching.has(h.id) ? u.idf : 0), 0) / total,
    })),
  };
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), "vsearch-fts-drift-"));
  let cluster: Awaited<ReturnType<typeof startCluster>> | undefined;
  let url = arg("--pg");
  if (!url) {
    const found = findPostgres();
    if ("missing" in found) throw new Error(`no PostgreSQL: ${found.missing}`);
    cluster = await startCluster(found.bin);
    url = cluster.urlFor("postgres");
  }
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  const dbName = `fts_drift_${Date.now()}`;
  await admin.unsafe(`CREATE DATABASE ${dbName}`);
  const pgUrl = new URL(url);
  pgUrl.pathname = `/${dbName}`;
  const pg = await openPgStore(pgUrl.toString(), { max: 4 });
  const lite = openStore(join(work, "vsearch.db"));
  try {
    const t0 = performance.now();
    const scope = await seed_(lite.exec);
    const tLite = performance.now() - t0;
    const t1 = performance.now();
    await seed_(pg.exec);
    const tPg = performance.now() - t1;
    console.log(
      `corpus: ${SEGMENTS} segments, vocabulary ${VOCAB.length} words; indexed in ${(tLite / 1000).toFixed(1)} s (SQLite) / ${(tPg / 1000).toFixed(1)} s (PostgreSQL); load ${loadavg()[0].toFixed(2)}`,
    );
    const rows: Record<string, unknown>[] = [];
    for (const [kind, make] of Object.entries(KINDS)) {
      let sameSet = 0;
      let complete = 0;
      let overlap = 0;
      let both = 0;
      let maxDrift = 0;
      let sumDrift = 0;
      let drifts = 0;
      let latLite = 0;
      let latPg = 0;
      for (let i = 0; i < QUERIES_PER_KIND; i++) {
        const q = make();
        const a0 = performance.now();
        const a = await answer(lite.exec, scope, q);
        const a1 = performance.now();
        const b = await answer(pg.exec, scope, q);
        latLite += a1 - a0;
        latPg += performance.now() - a1;
        if (a.complete && b.complete) {
          complete++;
          const sa = a.hits.map((h) => h.key).sort();
          const sb = b.hits.map((h) => h.key).sort();
          if (JSON.stringify(sa) === JSON.stringify(sb)) sameSet++;
        }
        const topA = new Set(a.hits.slice(0, 10).map((h) => h.key));
        const topB = b.hits.slice(0, 10).map((h) => h.key);
        if (topA.size) {
          overlap += topB.filter((k) => topA.has(k)).length / Math.min(10, topA.size);
          both++;
        }
        const scoreB = new Map(b.hits.map((h) => [h.key, h.score]));
        for (const h of a.hits) {
          const s = scoreB.get(h.key);
          if (s === undefined) continue;
          const d = Math.abs(s - h.score);
          if (d > 0.05 && process.env.FTS_DRIFT_DEBUG)
            console.log(`drift ${d.toFixed(3)} on ${JSON.stringify(q)}: ${JSON.stringify(h.text)} ${h.score} vs ${s}`);
          maxDrift = Math.max(maxDrift, d);
          sumDrift += d;
          drifts++;
        }
      }
      rows.push({
        kind,
        queries: QUERIES_PER_KIND,
        "complete (≤300 hits)": complete,
        "same hit set": sameSet,
        "top-10 overlap": both ? +(overlap / both).toFixed(3) : null,
        "score drift mean": drifts ? +(sumDrift / drifts).toExponential(2) : null,
        "score drift max": +maxDrift.toExponential(2),
        "ms/query SQLite": +(latLite / QUERIES_PER_KIND).toFixed(1),
        "ms/query PostgreSQL": +(latPg / QUERIES_PER_KIND).toFixed(1),
      });
    }
    console.table(rows);
    const out = join(import.meta.dirname, "results");
    mkdirSync(out, { recursive: true });
    const file = join(out, "fts-drift.json");
    writeFileSync(
      file,
      JSON.stringify({ segments: SEGMENTS, vocabulary: VOCAB.length, load: loadavg(), rows }, null, 2),
    );
    console.log(`written ${file}; load ${loadavg()[0].toFixed(2)}`);
  } finally {
    lite.close();
    await pg.close();
    await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
    await admin.end({ timeout: 5 });
    await cluster?.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
