/**
 * The two vector modes of a search (split out of service.ts, which decides the modes and fuses
 * them): `video` (nearest frames, merged into moments) and `scene` (nearest shots, plus shots whose
 * labels or caption name the query's words). docs/SEARCH.md, "Modes".
 */
import { calibrate, type NullStats } from "./calibration.ts";
import type { NearestRequest, ProbePolicy, SearchIndexes, VectorHit } from "./indexes.ts";
import { type Candidate, type FrameHit, framesToMoments } from "./moments.ts";
import { labelsOf, type SearchScope, type SearchStore, type ShotRow } from "./store.ts";
import { KStarts } from "./k-starts.ts";
import { contentWords, coverageOf, mentionTerms, ShotStems } from "./text-match.ts";

/** Nearest frames / shots fetched per search, and transcript segments. */
const FRAME_K = 1000;
const SHOT_K = 300;
const SCENE_TEXT_K = 500;
/** k asked of the vector index first when nothing says otherwise (see `admitted`, k-starts.ts). */
const FIRST_K = 128;

/** A scope as a memo key part. */
export function scopeKey(scope: SearchScope): string {
  return `${scope.collectionId ?? ""}/${scope.videoId ?? ""}`;
}

export class VectorModes {
  /** Scene text's per-shot stems (bounded; an entry is checked against the shot's text on use). */
  private readonly shotStems = new ShotStems(labelsOf);
  /** Where a new query's look-up starts, from where recent ones of the same account and mode ended. */
  private readonly kStarts = new KStarts(FIRST_K);

  constructor(
    private readonly d: { store: SearchStore; indexes: SearchIndexes },
    /** The pipeline's frame sampling interval (about one frame a second). */
    private readonly interval: number,
  ) {}

  async video(
    scope: SearchScope,
    modelId: string,
    q: Float32Array,
    th: Record<string, number>,
    allowShots?: Map<string, Set<number>>,
    band?: number,
    probe?: ProbePolicy,
  ): Promise<Candidate[]> {
    const sample = await this.d.indexes.sample("frames", scope.accountId, modelId);
    if (!sample.dim || sample.dim !== q.length) return [];
    const stats = this.d.indexes.nullStatsOf(sample, q);
    const cut = th["video:default"];
    const admitted = await this.admitted(
      { kind: "frames", scope, modelId, query: q, k: FRAME_K, allowShots, probe },
      stats,
      cut,
    );
    if (!admitted.length) return [];
    const meta = new Map((await this.d.store.frames(admitted.map((h) => h.id))).map((f) => [f.id, f]));
    const durations = await this.d.store.videos(scope.accountId, [
      ...new Set([...meta.values()].map((f) => f.video_id)),
    ]);
    const hits: FrameHit[] = [];
    for (const h of admitted) {
      const f = meta.get(h.id);
      if (f)
        hits.push({
          videoId: f.video_id,
          timestamp: f.timestamp,
          nextTimestamp: f.next_timestamp,
          shotIndex: f.shot_index,
          raw: h.raw,
          score: h.score,
        });
    }
    return framesToMoments(hits, {
      intervalSecs: this.interval,
      durationOf: (v) => durations.get(v)?.duration_secs ?? null,
      thresholdKey: "video:default",
      band,
    });
  }

  async scene(
    scope: SearchScope,
    modelId: string,
    q: Float32Array,
    text: string | null,
    th: Record<string, number>,
    allowShots?: Map<string, Set<number>>,
    probe?: ProbePolicy,
  ): Promise<Candidate[]> {
    const best = new Map<number, { shot: ShotRow | null; score: number; raw: number; key: string }>();
    const sample = await this.d.indexes.sample("shots", scope.accountId, modelId);
    if (sample.dim && sample.dim === q.length) {
      const stats = this.d.indexes.nullStatsOf(sample, q);
      for (const h of await this.admitted(
        { kind: "shots", scope, modelId, query: q, k: SHOT_K, allowShots, probe },
        stats,
        th["scene:default"],
      )) {
        best.set(h.id, { shot: null, score: h.score, raw: h.raw, key: "scene:default" });
      }
    }
    const words = text ? contentWords(text) : [];
    const textShots = new Map<number, ShotRow>();
    if (words.length && (await this.mayMentionScene(scope.accountId, words))) {
      const terms = mentionTerms(text!);
      const mentioned = await this.d.indexes.memoResult(
        scope.accountId,
        `scene-text\u0000${scopeKey(scope)}\u0000${terms.join(" ")}`,
        async () => await this.d.store.shotsMentioning(scope, terms, SCENE_TEXT_K),
      );
      for (const s of mentioned) {
        if (allowShots && !allowShots.get(s.video_id)?.has(s.shot_index)) continue;
        const cov = coverageOf(words, this.shotStems.of(s).stems);
        if (cov < th["scene:text"]) continue;
        textShots.set(s.id, s);
        const cur = best.get(s.id);
        if (!cur || cov > cur.score) best.set(s.id, { shot: s, score: cov, raw: cov, key: "scene:text" });
      }
    }
    const missing = [...best.keys()].filter((id) => !textShots.has(id));
    const rows = new Map([...textShots, ...(await this.d.store.shotsById(missing)).map((s) => [s.id, s] as const)]);
    const out: Candidate[] = [];
    for (const [id, b] of best) {
      const s = rows.get(id);
      if (!s) continue;
      const labels = this.shotStems.of(s).labels;
      out.push({
        videoId: s.video_id,
        type: "scene",
        mode: "scene",
        start: s.start_secs,
        end: s.end_secs,
        score: b.score,
        raw: b.raw,
        thresholdKey: b.key,
        text: s.caption ?? (labels.length ? labels.join(", ") : null),
        shotIndex: s.shot_index,
      });
    }
    return out;
  }

  /**
   * Nearest neighbours over the threshold. Most queries admit a few dozen rows, and the cost of a
   * look-up grows with k (the index rescores ~4k exact vectors), so k starts small and grows ×4 up
   * to `req.k` while at least half of the answers pass the cut (the index is approximate: its k-th
   * answer may sit a little below the true k-th, so "all of them passed" would stop too early).
   */
  private async admitted(
    req: NearestRequest,
    stats: NullStats,
    cut: number,
  ): Promise<(VectorHit & { score: number })[]> {
    // The same query (same cached vector) starts where it ended last time: the walk up would
    // repeat itself, and starting higher only ever admits more rows above the cut, never fewer.
    // A new one starts where most recent look-ups of its account and mode needed (k-starts.ts).
    const hintKey = `${req.kind}\u0000${req.modelId}\u0000${scopeKey(req.scope)}\u0000${cut}\u0000${req.allowShots ? "labels" : ""}`;
    const recentKey = `${req.scope.accountId}\u0000${hintKey}`;
    let k = Math.min(req.k, this.d.indexes.startK(req.query, hintKey) ?? this.kStarts.start(recentKey, req.k));
    const session = {};
    for (;;) {
      const hits = await this.d.indexes.nearest({ ...req, k, session });
      const kept = hits.map((h) => ({ ...h, score: calibrate(h.raw, stats) })).filter((h) => h.score >= cut);
      if (k >= req.k || hits.length < k || kept.length < k / 2) {
        this.d.indexes.noteK(req.query, hintKey, k);
        this.kStarts.noteEnd(recentKey, k, hits.length, kept.length, req.k);
        return kept;
      }
      k = Math.min(req.k, k * 4);
    }
  }

  /**
   * Whether scene text matching can find anything: some query word is one of the account's label
   * words, or the account has captions at all (both remembered until its content changes).
   */
  private async mayMentionScene(accountId: string, words: string[]): Promise<boolean> {
    const vocab = await this.d.indexes.memo(accountId, "scene-words", async () => {
      const { labels, captions } = await this.d.store.sceneVocabulary(accountId);
      return { words: new Set(labels.flatMap((l) => contentWords(l))), captions };
    });
    return vocab.captions > 0 || words.some((w) => vocab.words.has(w));
  }
}
