import { type Candidate, sameStart, temporalIou } from "./moments.ts";

export const RRF_K = 60;
/** Clips of one video overlapping this much (or starting at the same time) are the same moment. */
export const DUPLICATE_IOU = 0.7;

export interface Fused extends Candidate {
  /** Reciprocal Rank Fusion score. */
  fused: number;
}

const byScore = (a: Candidate, b: Candidate) => b.score - a.score || b.raw - a.raw || a.start - b.start;

/**
 * Reciprocal Rank Fusion (k = 60) across ranked lists (one per mode, plus semantic transcript), where the fused items are moments: a clip gets
 * 1/(k + rank) from its own mode's list, plus, from every other mode, 1/(k + rank) of that mode's
 * best clip overlapping it in time in the same video. So a moment that is both seen and said
 * rises above one found only by one mode.
 */
export function fuseModes(lists: Map<string, Candidate[]>, k = RRF_K): Fused[] {
  const ranked = new Map<string, { c: Candidate; rank: number }[]>();
  for (const [mode, list] of lists)
    ranked.set(
      mode,
      [...list].sort(byScore).map((c, i) => ({ c, rank: i + 1 })),
    );
  // Per mode and video, the clips in rank order, for the overlap look-ups.
  const byVideo = new Map<string, Map<string, { c: Candidate; rank: number }[]>>();
  for (const [mode, list] of ranked) {
    const m = new Map<string, { c: Candidate; rank: number }[]>();
    for (const e of list) {
      let l = m.get(e.c.videoId);
      if (!l) m.set(e.c.videoId, (l = []));
      l.push(e);
    }
    byVideo.set(mode, m);
  }
  const out: Fused[] = [];
  for (const [mode, list] of ranked) {
    for (const { c, rank } of list) {
      let fused = 1 / (k + rank);
      for (const [other, videos] of byVideo) {
        if (other === mode) continue;
        const hit = videos
          .get(c.videoId)
          ?.find((e) => Math.min(e.c.end, c.end) > Math.max(e.c.start, c.start) || sameStart(e.c.start, c.start));
        if (hit) fused += 1 / (k + hit.rank);
      }
      out.push({ ...c, fused });
    }
  }
  return out.sort((a, b) => b.fused - a.fused || byScore(a, b));
}

/**
 * Drops near-duplicates in fused order: a clip of the same video that starts within 0.01 s of
 * a kept one, or overlaps it with temporal IoU ≥ DUPLICATE_IOU, adds nothing a user can act on.
 */
export function suppressDuplicates<T extends Candidate>(sorted: T[]): T[] {
  const kept: T[] = [];
  const byVideo = new Map<string, T[]>();
  for (const c of sorted) {
    const same = byVideo.get(c.videoId) ?? [];
    if (same.some((k) => sameStart(k.start, c.start) || temporalIou(k, c) >= DUPLICATE_IOU)) continue;
    same.push(c);
    byVideo.set(c.videoId, same);
    kept.push(c);
  }
  return kept;
}
